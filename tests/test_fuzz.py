"""Fuzzing: mutated traces of every format through the readers, and random ``-p``
overrides through the parser and ``sim.run``. Bad input must give a clear error of
memsim's own (TraceError, ConfigError, AddressError), never a raw exception. Kept to a
few seconds: a few dozen examples per target, no shrinking-heavy strategies."""

from __future__ import annotations

import gzip
import io
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsim import config, sim
from memsim.mapping import AddressError
from memsim.trace import TraceError, open_trace

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

TEXT_SAMPLES = (
    b"0 R 0x1000\n5 W 0x2040\n9 R 0x40\n",  # native, timed
    b"R 0x1000\nW 0x2040\n",  # native, untimed
    b"0x1f40 READ 120\n0x2000 WRITE 130\n",  # DRAMsim3
    b"3 LD 0x1000\n0 ST 0x2040\n",  # Ramulator 2
    b"0x1f40 R\n0x2000 W\n",  # Ramulator 1
    b"4 R 0x1000 0x400\n2 W 0x2000\n",  # USIMM
)


def _npy_bytes() -> bytes:
    arr = np.zeros(4, dtype=[("cycle", "<i8"), ("op", "u1"), ("addr", "<i8")])
    arr["cycle"] = [0, 3, 5, 9]
    arr["addr"] = [0, 64, 128, 4096]
    arr["op"] = [0, 1, 0, 1]
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def _npz_bytes() -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, op=np.array([0, 1], np.uint8), addr=np.array([0, 64]))
    return buf.getvalue()


def _parquet_bytes() -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"op": np.array([0, 1, 0], np.uint8),
                             "addr": np.array([0, 64, 128], np.int64)}), buf)
    return buf.getvalue()


BINARY_SAMPLES = {"npy": _npy_bytes(), "npz": _npz_bytes(), "parquet": _parquet_bytes()}


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """``data`` with a few random byte edits (replace, insert, delete, truncate)."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(("replace", "insert", "delete", "truncate")))
        pos = draw(st.integers(0, max(0, len(out) - 1)))
        if kind == "replace" and out:
            out[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            out[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete" and out:
            del out[pos:pos + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del out[pos:]
    return bytes(out)


def _read(path, fmt=None) -> None:
    """Read a whole trace; a clear TraceError is a fine outcome, anything else not."""
    try:
        open_trace(path, fmt=fmt, chunk_size=3).read_all()
    except TraceError as e:
        assert str(path) in str(e)  # every message names the file


@SETTINGS
@given(data=st.data(), sample=st.sampled_from(TEXT_SAMPLES), zipped=st.booleans())
def test_mutated_text_traces(tmp_path, data, sample, zipped):
    body = data.draw(mutated(sample))
    if zipped:
        body = gzip.compress(body)
        if data.draw(st.booleans()):
            body = data.draw(mutated(body))
    path = tmp_path / "t.trace"
    path.write_bytes(body)
    _read(path)


@SETTINGS
@given(data=st.data(), fmt=st.sampled_from(sorted(BINARY_SAMPLES)))
def test_mutated_binary_traces(tmp_path, data, fmt):
    body = data.draw(mutated(BINARY_SAMPLES[fmt]))
    path = tmp_path / f"t.{fmt}"
    path.write_bytes(body)
    _read(path)
    _read(path, fmt)  # also when the format is forced


def test_the_two_raw_exceptions_of_the_issue_are_clear_errors(tmp_path):
    bad = _npy_bytes().replace(b"'shape': (4,)", b"'shape': (4,(")
    path = tmp_path / "bad.npy"
    path.write_bytes(bad)
    try:
        open_trace(path).read_all()
        raise AssertionError("expected a TraceError")
    except TraceError as e:
        assert str(e).startswith(f"{path}: not a readable .npy array (corrupt header: ")
    try:
        config.load(None, ["controller.row_hit_cap=99999999999999999999"])
        raise AssertionError("expected a ConfigError")
    except config.ConfigError as e:
        assert str(e) == ("controller.row_hit_cap: 99999999999999999999 is out of range "
                          "(expected an integer of magnitude below 2**40)")


KEYS = ("controller.scheduler", "controller.row_hit_cap", "controller.page_policy",
        "controller.page_timeout_cycles", "controller.read_queue", "controller.write_queue",
        "controller.write_high_watermark", "controller.write_low_watermark",
        "dram.speed", "dram.org", "dram.density_gbit", "dram.channels", "dram.ranks",
        "dram.refresh", "dram.timing.tRFC", "dram.timing.CL", "dram.timing.tREFI",
        "dram.timing", "dram", "mapping.order", "mapping.xor_bank", "frontend.mode",
        "frontend.max_outstanding", "frontend.cpu_cycles_per_dram_cycle", "name",
        "controller.nope", "nope", "dram.timing.tNOPE", "controller..scheduler", "")
VALUES = st.one_of(
    st.integers(-(1 << 70), 1 << 70).map(str),
    st.integers(0, 70).map(lambda e: str(1 << e)),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from((".nan", ".inf", "-.inf", "1e308", "true", "null", "[1, 2]", "{a: 1}",
                     "fcfs", "frfcfs_cap", "closed", "timeout", "DDR4_3200AA", "x16",
                     "ro-ba-bg-ra-co-ch", "ch-co-ra-bg-ba-ro", "afap", "timestamped",
                     "[", "'", "0x10", "", "1.5", "0.0", "2")),
    st.text(max_size=12),
)


@SETTINGS
@given(key=st.sampled_from(KEYS), value=VALUES)
def test_random_overrides_parse_to_a_config_or_a_config_error(key, value):
    try:
        cfg = config.load(None, [f"{key}={value}"])
    except config.ConfigError as e:
        assert str(e)
        return
    # whatever loads is usable: every integer fits the engine, every float is finite
    for section in ("dram", "controller", "frontend"):
        for v in vars(getattr(cfg, section)).values():
            if isinstance(v, float):
                assert math.isfinite(v)
            elif isinstance(v, int):
                assert abs(v) < config.INT_LIMIT


REQUESTS = (np.arange(40, dtype=np.int64) * 4160) % (1 << 30)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(overrides=st.lists(st.tuples(st.sampled_from(KEYS[:24]), VALUES), max_size=3))
def test_random_overrides_through_a_run(overrides):
    items = [f"{k}={v}" for k, v in overrides]
    try:
        result = sim.run_arrays(REQUESTS, REQUESTS % 3 == 0, np.arange(40) * 7,
                                overrides=items, progress=False)
    except (config.ConfigError, TraceError, AddressError) as e:
        assert str(e)
        return
    assert result.reads + result.writes == len(REQUESTS)
