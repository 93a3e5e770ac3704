"""Output files: written whole or not at all, to the place the user meant (special
files, symlinks, the umask, the input trace), by run, trace gen and the library."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import default_signals

from memsim import cli, outfile
from memsim.trace import generate, open_trace, write_trace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "traces" / "example_mix.trace"


def memsim(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, **kw)


@pytest.mark.skipif(os.geteuid() != 0, reason="replacing /dev/null needs root")
def test_dev_null_stays_a_device():
    # several outputs may share a device: writing it replaces nothing
    proc = memsim("run", EXAMPLE, "-q", "--json", "/dev/null", "--csv", "/dev/null",
                  "--cmd-log", "/tmp/../dev/null")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    proc = memsim("trace", "gen", "stream", "-n", "100", "-o", "/dev/null", "-q")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert list(Path("/dev").glob(".null.*")) == []


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = {}

    def read():
        with open(fifo, "rb") as f:
            got["data"] = f.read()

    reader = threading.Thread(target=read)
    reader.start()
    assert cli.main(["run", str(EXAMPLE), "-q", "--json", str(fifo)]) == 0
    reader.join(timeout=60)
    assert json.loads(got["data"])["requests"]["total"] == 20000
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fifo"]


def test_symlink_is_followed_and_stays_a_link(tmp_path):
    target = tmp_path / "real" / "r.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.csv"
    dangling.symlink_to(tmp_path / "real" / "new.csv")
    assert cli.main(["run", str(EXAMPLE), "-q", "--json", str(link),
                     "--cmd-log", str(dangling)]) == 0
    assert link.is_symlink() and dangling.is_symlink()
    assert json.loads(target.read_text())["requests"]["total"] == 20000
    assert (tmp_path / "real" / "new.csv").read_text().startswith("# memsim ")
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["new.csv", "r.json"]


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match=f"^{tmp_path}: is a directory, not a file$"):
        outfile.write_text(tmp_path, "x")


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_files_respect_the_umask_and_replaced_files_keep_their_mode(tmp_path, umask):
    old = os.umask(umask)
    try:
        assert cli.main(["run", str(EXAMPLE), "-q", "--json", str(tmp_path / "r.json"),
                         "--csv", str(tmp_path / "r.csv"),
                         "--cmd-log", str(tmp_path / "c.csv.gz")]) == 0
        assert cli.main(["trace", "gen", "random", "-n", "10", "-o",
                         str(tmp_path / "t.npy"), "-q"]) == 0
    finally:
        os.umask(old)
    for name in ("r.json", "r.csv", "c.csv.gz", "t.npy"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o666 & ~umask, name
    os.chmod(tmp_path / "r.json", 0o640)
    assert cli.main(["run", str(EXAMPLE), "-q", "--json", str(tmp_path / "r.json")]) == 0
    assert stat.S_IMODE(os.stat(tmp_path / "r.json").st_mode) == 0o640


def test_refuses_to_overwrite_the_input_trace_or_config(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_bytes(EXAMPLE.read_bytes())
    before = trace.read_bytes()
    link = tmp_path / "alias.json"
    link.symlink_to(trace)
    for option, path in (("--json", trace), ("--csv", trace), ("--cmd-log", trace),
                         ("--json", link)):
        proc = memsim("run", trace, "-q", option, path)
        assert proc.returncode == 2
        assert proc.stderr == (f"memsim: error: {option} {path}: that is the input file "
                               f"{trace}; refusing to overwrite it\n")
    assert trace.read_bytes() == before
    cfg = tmp_path / "c.yaml"
    cfg.write_text("controller:\n  scheduler: fcfs\n")
    proc = memsim("run", trace, "-q", "-c", cfg, "--json", cfg)
    assert proc.returncode == 2 and "that is the input file" in proc.stderr
    assert cfg.read_text() == "controller:\n  scheduler: fcfs\n"
    proc = memsim("run", trace, "-q", "--json", tmp_path / "same", "--csv", tmp_path / "same")
    assert proc.returncode == 2
    assert proc.stderr == (f"memsim: error: --csv {tmp_path / 'same'}: --json writes the "
                           f"same file\n")


def test_missing_parent_directories_are_created_as_documented(tmp_path):
    out = tmp_path / "a" / "b" / "r.json"
    assert cli.main(["run", str(EXAMPLE), "-q", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["requests"]["total"] == 20000
    assert "missing parent directories are created" in (
        ROOT / "docs" / "reference" / "running.md").read_text()


def test_failed_write_leaves_the_previous_file(tmp_path):
    out = tmp_path / "keep.trace"
    out.write_text("0 R 0x0\n")

    class Boom(Exception):
        pass

    def explode(n):
        raise Boom

    cycle, is_write, addr = generate("random", 300000, footprint_bytes=1 << 24)
    with pytest.raises(Boom):
        write_trace(out, cycle, is_write, addr, progress=explode)
    assert out.read_text() == "0 R 0x0\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.trace"]


def test_trace_gen_interrupted_keeps_the_previous_trace(tmp_path):
    out = tmp_path / "k.trace"
    out.write_text("0 R 0x40\n")
    proc = subprocess.Popen([sys.executable, "-m", "memsim", "trace", "gen", "random", "-n",
                             "30000000", "-o", str(out), "-q"], cwd=ROOT,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".k.trace.*")) and time.monotonic() < deadline:
        time.sleep(0.05)  # wait until it is writing its temporary file
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert out.read_text() == "0 R 0x40\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.trace"]
    assert len(open_trace(out).read_all()) == 1
