"""Stepping: a loop runs to a given DRAM cycle and reports the requests completed
meanwhile (what the SimPy front door, ``memsim.simpy``, needs).

Stepping is a run-time property of every loop variant (``P[P_STEP]``), not a variant
of its own: a SimPy model runs on the loop a trace replay of its config compiles (the
plain loop, the NDA loop), so the user waits for no compile of their own and the test
suite compiles two variants fewer. Not stepping, the loop pays one predictable branch
per decision (the stop as the next event's candidate; the pause check shares the
command log's branch) and, replaying timed, one per column command (the completion
record sits on the timed path, so as fast as possible pays nothing there; a stepped
engine is always timed). Measured: benchmarks/ab_speed.py, docs/speed.md.
Every engine's ``X[X_STEP]`` is a ``Step`` (one-element arrays when not stepping), so
that the loop's argument types, and with them its compiled code, are the same.

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

# (no JIT_FEATURE: every variant's loop runs these helpers; memsim.engine.jit.in_variant)
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
