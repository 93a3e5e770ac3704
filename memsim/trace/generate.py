"""Synthetic traces: simple, seeded request streams for experiments and tests.

``generate(kind, n, ...)`` returns ``(cycle, is_write, addr)`` numpy arrays. Addresses
are 64-byte aligned (one cache line per request) and lie in ``[0, footprint_bytes)``.

Kinds:

``stream``   consecutive lines 0, 64, 128, ... wrapping at the footprint
``random``   lines drawn uniformly from the footprint
``strided``  0, s, 2s, ... (``stride_bytes`` = s, a multiple of 64) wrapping at the
             footprint
``hotspot``  exactly ``round(hot_fraction * n)`` requests (default 90%) go to lines
             drawn uniformly from a hot set of ``hot_bytes`` (default 64 KiB) at the
             bottom of the footprint, the rest to the lines above it
``mix``      ``streams`` (default 4) sequential streams, as from that many cores, each
             in its own equal slice of the footprint and wrapping within it; each
             request belongs to a stream chosen uniformly at random

Exactly ``round(write_ratio * n)`` requests are writes, at random positions. With
``rate_requests_per_cycle`` = r the trace is timed and request ``i`` arrives at cycle
``floor(i / r)`` (non-decreasing, r per cycle on average); without it every cycle is
-1 (untimed). The same arguments and seed always give the same arrays; addresses and
write positions come from independent random streams, so changing the write ratio
leaves the addresses unchanged.
"""

from __future__ import annotations

import numpy as np

LINE_BYTES = 64
KINDS = ("stream", "random", "strided", "hotspot", "mix")

_KIND_OPTIONS = {
    "stream": {},
    "random": {},
    "strided": {},
    "hotspot": {"hot_fraction": 0.9, "hot_bytes": 64 << 10},
    "mix": {"streams": 4},
}


def generate(kind: str, n: int, seed: int = 0, write_ratio: float = 0.0,
             footprint_bytes: int = 1 << 32, stride_bytes: int = LINE_BYTES,
             rate_requests_per_cycle: float | None = None, **kw
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A synthetic trace of ``n`` requests; see the module docstring for the kinds.

    Returns (cycle int64, is_write bool, addr int64). Raises ValueError for bad
    arguments and TypeError for options the kind does not take.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown trace kind {kind!r} (expected one of {', '.join(KINDS)})")
    options = _options(kind, kw)
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if not 0.0 <= write_ratio <= 1.0:
        raise ValueError(f"write_ratio must be in [0, 1], got {write_ratio}")
    footprint_lines = _lines(footprint_bytes, "footprint_bytes")
    address_rng, write_rng = (np.random.default_rng(s)
                              for s in np.random.SeedSequence(seed).spawn(2))

    if kind == "stream":
        lines = np.arange(n, dtype=np.int64) % footprint_lines
    elif kind == "random":
        lines = address_rng.integers(0, footprint_lines, n, dtype=np.int64)
    elif kind == "strided":
        stride_lines = _lines(stride_bytes, "stride_bytes") % footprint_lines
        lines = (np.arange(n, dtype=np.int64) * stride_lines) % footprint_lines
    elif kind == "hotspot":
        lines = _hotspot(address_rng, n, footprint_lines, **options)
    else:
        lines = _mix(address_rng, n, footprint_lines, **options)

    is_write = np.zeros(n, dtype=bool)
    is_write[write_rng.choice(n, size=round(write_ratio * n), replace=False)] = True
    return _cycles(n, rate_requests_per_cycle), is_write, lines * LINE_BYTES


def _options(kind: str, kw: dict) -> dict:
    allowed = _KIND_OPTIONS[kind]
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        takes = ", ".join(allowed) or "no extra options"
        raise TypeError(f"generate({kind!r}) got unexpected option(s) "
                        f"{', '.join(unknown)} (it takes {takes})")
    return {**allowed, **kw}


def _lines(n_bytes: int, name: str) -> int:
    """``n_bytes`` as a whole, positive number of 64-byte lines."""
    if n_bytes < LINE_BYTES or n_bytes % LINE_BYTES:
        raise ValueError(f"{name} must be a positive multiple of {LINE_BYTES}, got {n_bytes}")
    return n_bytes // LINE_BYTES


def _cycles(n: int, rate_requests_per_cycle: float | None) -> np.ndarray:
    if rate_requests_per_cycle is None:
        return np.full(n, -1, dtype=np.int64)
    if not rate_requests_per_cycle > 0:
        raise ValueError(f"rate_requests_per_cycle must be positive, got "
                         f"{rate_requests_per_cycle}")
    return np.floor(np.arange(n) / rate_requests_per_cycle).astype(np.int64)


def _hotspot(rng: np.random.Generator, n: int, footprint_lines: int,
             hot_fraction: float, hot_bytes: int) -> np.ndarray:
    if not 0.0 <= hot_fraction <= 1.0:
        raise ValueError(f"hot_fraction must be in [0, 1], got {hot_fraction}")
    hot_lines = _lines(hot_bytes, "hot_bytes")
    if hot_lines > footprint_lines:
        raise ValueError(f"hot_bytes ({hot_bytes}) exceeds footprint_bytes "
                         f"({footprint_lines * LINE_BYTES})")
    n_hot = round(hot_fraction * n)
    if n_hot < n and hot_lines == footprint_lines:
        raise ValueError("hot_bytes equals footprint_bytes, leaving no room for the "
                         "cold requests; use a larger footprint or hot_fraction=1")
    is_hot = np.zeros(n, dtype=bool)
    is_hot[rng.choice(n, size=n_hot, replace=False)] = True
    lines = rng.integers(hot_lines, max(footprint_lines, hot_lines + 1), n, dtype=np.int64)
    lines[is_hot] = rng.integers(0, hot_lines, n_hot, dtype=np.int64)
    return lines


def _mix(rng: np.random.Generator, n: int, footprint_lines: int, streams: int
         ) -> np.ndarray:
    if streams < 1:
        raise ValueError(f"streams must be at least 1, got {streams}")
    region_lines = footprint_lines // streams
    if region_lines < 1:
        raise ValueError(f"footprint of {footprint_lines} lines is too small for "
                         f"{streams} streams")
    owner = rng.integers(0, streams, n)
    lines = np.empty(n, dtype=np.int64)
    for stream in range(streams):
        mine = np.flatnonzero(owner == stream)
        lines[mine] = stream * region_lines + np.arange(len(mine)) % region_lines
    return lines
