"""Two command buses (HBM3's row and column buses): the ``F_DUALBUS`` loop variant's
channel scheduler.

A standard with ``COMMAND_BUSES`` (memsim/dram/hbm3.py) has a row bus (ACT, PRE, PREA,
REF) and a column bus (RD, WR, RDA, WRA), so a row command and a column command may
issue in the same cycle. Its constraint table holds a bus row per bus instead of the
single command bus of DDR4, so a command occupies only its own bus. The scheduler
here takes a decision as every variant does (``schedule.schedule_channel``); if that
issued a command it takes a second one at the same cycle, which the bus rows confine to
the other bus, and asks for the channel again at the next cycle. A module of its own
(``JIT_FEATURE``), so that the other variants never inline its second decision.
"""

from __future__ import annotations

from numba import njit

from memsim.engine import schedule
from memsim.engine.jit import INLINE as _INLINE
from memsim.engine.layout import C_CMD, F_DUALBUS, N_CMD

JIT_FEATURE = F_DUALBUS


@njit(**_INLINE)
def commands_issued(S):
    """Commands issued so far (every channel): whether a decision issued one."""
    n = 0
    for c in range(N_CMD):
        n += S.counters[C_CMD + c]
    return n


@njit(**_INLINE)
def schedule_channel(P, T, S, X, ch, t, features):
    """At most one command per bus on channel ``ch`` at cycle ``t``: a decision, and
    after one that issued a command a second at the same cycle. Returns the next cycle
    at which this channel needs attention."""
    before = commands_issued(S)
    nxt = schedule.schedule_channel(P, T, S, X, ch, t, features)
    if commands_issued(S) == before:
        return nxt
    schedule.schedule_channel(P, T, S, X, ch, t, features)
    return t + 1
