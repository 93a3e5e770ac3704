#!/bin/sh
# The system packages the test suite needs beyond Python's: valgrind (tracing programs
# with `memsim trace capture`, and cachegrind, the cache model's reference) and a C
# compiler with its headers (`memsim workload build`). Installed with apt-get on Debian
# and Ubuntu when missing (as root, or through sudo); elsewhere this says which are
# missing, and the tests that need them are skipped with that reason.
set -eu
missing=""
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
command -v cc >/dev/null 2>&1 || missing="$missing gcc"
[ -e /usr/include/stdio.h ] || missing="$missing libc6-dev"
[ -z "$missing" ] && exit 0
if command -v apt-get >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else sudo="none"; fi
    if [ "$sudo" != "none" ]; then
        echo "installing the test suite's system packages:$missing" >&2
        $sudo apt-get update -qq >/dev/null
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
        exit 0
    fi
fi
echo "not installed:$missing (the tests that need them will be skipped)" >&2
