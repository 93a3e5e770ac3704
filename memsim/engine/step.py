"""Stepping: the ``F_STEP`` loop variant runs to a given DRAM cycle and reports the
requests completed meanwhile (what the SimPy front door, ``memsim.simpy``, needs).

``Step.ctl[ST_STOP]`` is the cycle the loop stops at (that cycle is not simulated yet);
every column command appends its request's id and data-end cycle to ``comp_id`` /
``comp_end`` (``ctl[ST_N]`` entries) and pulls the stop forward to that end cycle, so
the caller can fire the request's completion before anything that reacts to it could
need the memory system. The loop also stops when the completion buffer could overflow
in the next cycle. Requests fed with ``final`` false stay in the chunk until they enter
the controller (``F_IDX`` says how many did).
"""

from __future__ import annotations

from collections import namedtuple

from numba import njit

from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import F_STEP

# the variants whose loops run this module's helpers (memsim.engine.jit.in_variant)
JIT_FEATURE = F_STEP

Step = namedtuple("Step", "ctl comp_id comp_end")
ST_STOP, ST_N, ST_LEN = range(3)


@njit(**_INLINE)
def step_complete(X, rid, end):
    n = X.ctl[ST_N]
    X.comp_id[n] = rid
    X.comp_end[n] = end
    X.ctl[ST_N] = n + 1
    if end < X.ctl[ST_STOP]:
        X.ctl[ST_STOP] = end


@njit(**_INLINE)
def step_pause(X, t, nch):
    """Whether the loop must stop before simulating cycle ``t``."""
    return t >= X.ctl[ST_STOP] or X.ctl[ST_N] + nch > X.comp_id.size


@njit(**_INLINE)
def step_stop(X):
    return X.ctl[ST_STOP]
