"""Synthetic traces (memsim.trace.generate) and the ``memsim trace`` sub-commands."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from memsim.trace import KINDS, generate, open_trace
from memsim.trace.cli import add_trace_parser, parse_bytes

MiB = 1 << 20


@pytest.mark.parametrize("kind", KINDS)
def test_deterministic_aligned_and_inside_the_footprint(kind):
    cycle, is_write, addr = generate(kind, 5000, seed=7, write_ratio=0.3,
                                     footprint_bytes=MiB, stride_bytes=4096)
    again = generate(kind, 5000, seed=7, write_ratio=0.3, footprint_bytes=MiB,
                     stride_bytes=4096)
    for a, b in zip((cycle, is_write, addr), again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert (cycle.dtype, is_write.dtype, addr.dtype) == (np.int64, bool, np.int64)
    assert len(addr) == 5000
    assert (addr % 64 == 0).all()
    assert addr.min() >= 0 and addr.max() < MiB
    assert (cycle == -1).all()  # untimed without a rate
    assert is_write.sum() == 1500  # exactly round(0.3 * n)


@pytest.mark.parametrize("kind", ["random", "hotspot", "mix"])
def test_seeds_differ(kind):
    a = generate(kind, 1000, seed=1, footprint_bytes=MiB)[2]
    b = generate(kind, 1000, seed=2, footprint_bytes=MiB)[2]
    assert not np.array_equal(a, b)


def test_write_ratio_does_not_move_addresses():
    _, w0, a0 = generate("random", 1000, seed=3, write_ratio=0.0)
    _, w1, a1 = generate("random", 1000, seed=3, write_ratio=0.5)
    np.testing.assert_array_equal(a0, a1)
    assert w0.sum() == 0 and w1.sum() == 500


@pytest.mark.parametrize("ratio, writes", [(0.0, 0), (1.0, 999), (0.25, 250), (0.1234, 123)])
def test_exact_write_count(ratio, writes):
    assert generate("stream", 999, write_ratio=ratio)[1].sum() == writes


def test_stream_is_sequential_and_wraps():
    addr = generate("stream", 10, footprint_bytes=4 * 64)[2]
    assert addr.tolist() == [0, 64, 128, 192, 0, 64, 128, 192, 0, 64]


def test_strided_steps_by_the_stride_and_wraps():
    addr = generate("strided", 6, footprint_bytes=1024, stride_bytes=256)[2]
    assert addr.tolist() == [0, 256, 512, 768, 0, 256]


def test_random_covers_the_footprint_uniformly():
    addr = generate("random", 40000, footprint_bytes=64 * 64)[2]
    counts = np.bincount(addr // 64, minlength=64)
    assert counts.min() > 400 and counts.max() < 850  # expected 625 each


def test_hotspot_sends_the_hot_fraction_to_the_hot_set():
    addr = generate("hotspot", 10000, footprint_bytes=MiB)[2]
    hot = addr < 64 * 1024
    assert hot.sum() == 9000  # default: 90% to a 64 KiB hot set, exactly
    addr = generate("hotspot", 1000, footprint_bytes=MiB, hot_fraction=0.5,
                    hot_bytes=4096)[2]
    assert (addr < 4096).sum() == 500
    assert len(np.unique(addr[addr < 4096])) <= 64


def test_mix_interleaves_sequential_streams_in_separate_regions():
    addr = generate("mix", 4000, footprint_bytes=MiB, streams=4)[2]
    region = addr // (MiB // 4)
    assert set(region.tolist()) == {0, 1, 2, 3}
    for r in range(4):
        mine = addr[region == r]
        assert mine[0] == r * (MiB // 4)
        assert (np.diff(mine) == 64).all()  # each stream is sequential
    assert (np.diff(region) != 0).mean() > 0.5  # and they are interleaved
    assert set((generate("mix", 100, footprint_bytes=MiB, streams=2)[2]
                // (MiB // 2)).tolist()) == {0, 1}


@pytest.mark.parametrize("rate, expected", [
    (1.0, [0, 1, 2, 3, 4, 5]),
    (0.5, [0, 2, 4, 6, 8, 10]),
    (2.0, [0, 0, 1, 1, 2, 2]),
    (0.3, [0, 3, 6, 10, 13, 16]),
])
def test_rate_spaces_requests(rate, expected):
    assert generate("random", 6, rate_requests_per_cycle=rate)[0].tolist() == expected


def test_zero_requests():
    cycle, is_write, addr = generate("random", 0, write_ratio=0.5)
    assert len(cycle) == len(is_write) == len(addr) == 0


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(kind="zigzag"), ValueError, "unknown trace kind 'zigzag' (expected one of stream, "
                                      "random, strided, hotspot, mix)"),
    (dict(n=-1), ValueError, "n must be non-negative, got -1"),
    (dict(write_ratio=1.5), ValueError, "write_ratio must be in [0, 1], got 1.5"),
    (dict(footprint_bytes=100), ValueError, "footprint_bytes must be a positive multiple "
                                            "of 64, got 100"),
    (dict(kind="strided", stride_bytes=48), ValueError, "stride_bytes must be a positive "
                                                        "multiple of 64, got 48"),
    (dict(rate_requests_per_cycle=0), ValueError, "rate_requests_per_cycle must be positive"),
    (dict(streams=2), TypeError, "generate('random') got unexpected option(s) streams (it "
                                 "takes no extra options)"),
    (dict(kind="hotspot", hot_bytes=2 * MiB), ValueError, "hot_bytes (2097152) exceeds "
                                                          "footprint_bytes (1048576)"),
    (dict(kind="hotspot", hot_fraction=2), ValueError, "hot_fraction must be in [0, 1]"),
    (dict(kind="mix", streams=0), ValueError, "streams must be at least 1, got 0"),
])
def test_bad_arguments(kwargs, error, message):
    args = dict(kind="random", n=10, footprint_bytes=MiB) | kwargs
    with pytest.raises(error) as caught:
        generate(**args)
    assert message in str(caught.value)


# ---------------------------------------------------------------- memsim trace ...


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="memsim")
    add_trace_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


def test_gen_then_info(tmp_path, capsys):
    path = tmp_path / "h.trace.gz"
    assert run(["trace", "gen", "hotspot", "-n", "1000", "-o", str(path), "--seed", "3",
                "--write-ratio", "0.25", "--footprint", "1MiB", "--rate", "0.5"]) == 0
    assert capsys.readouterr().out == (f"wrote 1000 requests (750 reads, 250 writes) to "
                                       f"{path} (native)\n")
    cycle, is_write, addr = generate("hotspot", 1000, seed=3, write_ratio=0.25,
                                     footprint_bytes=MiB, rate_requests_per_cycle=0.5)
    got = open_trace(path).read_all()
    np.testing.assert_array_equal(got.addr, addr)
    np.testing.assert_array_equal(got.cycle, cycle)

    assert run(["trace", "info", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    n_lines = len(np.unique(addr // 64))
    assert lines == [
        f"file:        {path}",
        "format:      native (gzip)",
        "requests:    1000 (750 reads, 250 writes)",
        f"addresses:   {addr.min():#x} .. {addr.max():#x}",
        f"footprint:   {n_lines} distinct 64 B lines ({n_lines * 64} bytes)",
        "time span:   1998 cycles (cycle 0 to 1998)",
        "clock:       dram (no '# clock:' header: the cycles of the DRAM clock that replays "
        "it)",
    ]


@pytest.mark.parametrize("name, fmt", [("a.parquet", "parquet"), ("a.npz", "npz"),
                                       ("a.txt", "usimm")])
def test_gen_formats_and_untimed_info(tmp_path, capsys, name, fmt):
    path = tmp_path / name
    argv = ["trace", "gen", "mix", "-n", "64", "-o", str(path), "--streams", "2",
            "--footprint", "64KiB"]
    assert run(argv + (["--format", fmt] if fmt == "usimm" else [])) == 0
    capsys.readouterr()
    assert run(["trace", "info", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"format:      {fmt}\n" in out
    assert "footprint:   64 distinct 64 B lines (4096 bytes)\n" in out
    assert "time span:   untimed\n" in out


def test_info_errors_exit_2(tmp_path, capsys):
    assert run(["trace", "info", str(tmp_path / "none.trace")]) == 2
    assert capsys.readouterr().err == f"memsim: error: {tmp_path / 'none.trace'}: no such file\n"
    bad = tmp_path / "bad.trace"
    bad.write_text("R 0x40\nQ 0x80\n")
    assert run(["trace", "info", str(bad)]) == 2
    assert capsys.readouterr().err == (f"memsim: error: {bad}:2: 'Q 0x80': unknown op 'Q' "
                                       "(expected R or W)\n")
    assert run(["trace", "info", str(bad), "--skip-bad-lines"]) == 0
    assert "skipped:     1 bad line(s)" in capsys.readouterr().out


def test_gen_errors_exit_2(tmp_path, capsys):
    out = str(tmp_path / "x.trace")
    assert run(["trace", "gen", "stream", "-n", "5", "-o", out, "--streams", "3"]) == 2
    assert "--streams applies only to the mix kind, not stream" in capsys.readouterr().err
    assert run(["trace", "gen", "random", "-n", "5", "-o", out, "--write-ratio", "2"]) == 2
    assert "--write-ratio must be in [0, 1], got 2.0" in capsys.readouterr().err
    assert run(["trace", "gen", "random", "-n", "5", "-o", out, "--format", "dramsim3"]) == 2
    assert "dramsim3 traces need cycles" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["trace", "gen", "random", "-n", "5", "-o", out, "--footprint", "4GB?"])
    assert "invalid size '4GB?'" in capsys.readouterr().err


@pytest.mark.parametrize("text, value", [("4096", 4096), ("64KiB", 65536), ("4GiB", 4 << 30),
                                         ("1GB", 10**9), ("2 MiB", 2 * MiB), ("8b", 8)])
def test_parse_bytes(text, value):
    assert parse_bytes(text) == value
