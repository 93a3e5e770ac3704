"""Latency percentiles from the engine's histogram: exact below 65,536 cycles, and
interpolated within a bucket above (not the bucket's lower edge), checked against
distributions whose nearest-rank percentiles are known in closed form."""

from __future__ import annotations

import numpy as np
import pytest

from memsim.engine import layout
from memsim.results import _percentile

# the engine's own bucketing, run as plain Python (no compile)
_index = np.vectorize(layout.hist_index.py_func, otypes=[np.int64])


def _hist(latencies) -> np.ndarray:
    hist = np.zeros(layout.HIST_SIZE, np.int64)
    np.add.at(hist, _index(np.asarray(latencies, np.int64)), 1)
    return hist


def _nearest_rank(sorted_values, p) -> int:
    n = len(sorted_values)
    return int(sorted_values[-(-p * n // 100) - 1])  # the ceil(p n / 100)-th smallest


@pytest.mark.parametrize("p", [1, 50, 90, 95, 99, 100])
def test_every_cycle_of_the_buckets_once_gives_exact_percentiles(p):
    # 200 whole buckets of 512 cycles from 2**17 (131,072): latencies 131,072 ...
    # 233,471, one each. The p-th percentile is the ceil(p n / 100)-th of them.
    values = np.arange(1 << 17, (1 << 17) + 512 * 200)
    assert _percentile(_hist(values), p, int(values.max())) == _nearest_rank(values, p)


def test_p95_and_p99_differ_within_one_bucket():
    # the case: p95 and p99 fell into the bucket starting at 65,536 cycles
    # (256 cycles wide) and both read as its lower edge. 100 latencies of 65,536 + i
    # for i = 0..99 all sit in that bucket, which also holds the maximum: they span
    # 65,536 .. 65,635, one per cycle, so the interpolation is exact.
    values = np.arange(1 << 16, (1 << 16) + 100)
    hist = _hist(values)
    assert np.count_nonzero(hist) == 1
    p95, p99 = (_percentile(hist, p, int(values.max())) for p in (95, 99))
    assert (p95, p99) == (65536 + 94, 65536 + 98)


def test_interpolation_never_exceeds_the_maximum():
    # 1,000 latencies of exactly 100,000 cycles: their bucket starts at 99,840, and with
    # the maximum in it they span 99,840 .. 100,000 (161 cycles)
    hist = _hist(np.full(1000, 100_000))
    assert _percentile(hist, 99, 100_000) == 99_840 + 989 * 161 / 1000
    assert _percentile(hist, 100, 100_000) == 100_000  # not 99,840 + 999 * 0.161


def test_without_the_maximum_a_bucket_is_its_whole_width():
    values = np.arange(1 << 17, (1 << 17) + 256)  # half of a 512-cycle bucket
    assert _percentile(_hist(values), 50) == (1 << 17) + 127 * 512 / 256


def test_below_the_linear_limit_percentiles_are_exact_integers():
    rng = np.random.default_rng(3)
    values = np.sort(rng.integers(20, 65_000, 5_000))
    hist = _hist(values)
    for p in (50, 95, 99):
        got = _percentile(hist, p, int(values.max()))
        assert got == _nearest_rank(values, p) and isinstance(got, int)
