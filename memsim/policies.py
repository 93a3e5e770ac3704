"""The memory controller's policies by name: its schedulers and page policies.

One registry that the config (the allowed values of ``controller.scheduler`` and
``controller.page_policy``), the engine (the flags and ids the compiled loop tests) and
the tests read. A scheduler is a set of flags, each a rule the compiled loop applies
when set (``memsim.engine.build`` copies them into the loop's parameter array); a page
policy is an id the loop switches on. Plain Python: importing it costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scheduler:
    """How the controller chooses among the requests whose next command is ready."""

    summary: str
    hit_first: bool = False  # ready row hits go before older requests (FR-FCFS)
    capped: bool = False  # at most controller.row_hit_cap hits bypass an older request
    oldest_only: bool = False  # only the oldest request of the queue may issue
    conflict_aware: bool = False  # ERUCA's resource-conflict avoidance (sub-banks only)


SCHEDULERS = {
    "fcfs": Scheduler("the oldest request whose next command is ready"),
    "fcfs_strict": Scheduler("the oldest request of the queue only, when its command is "
                             "ready", oldest_only=True),
    "frfcfs": Scheduler("ready row hits first, then the oldest ready request",
                        hit_first=True),
    "frfcfs_cap": Scheduler("FR-FCFS, but at most controller.row_hit_cap row hits bypass "
                            "an older request to their bank", hit_first=True, capped=True),
    "eruca": Scheduler("FR-FCFS avoiding ERUCA's resource conflicts between sub-banks "
                       "(dram.subbank_scheme: eruca)", hit_first=True, conflict_aware=True),
}


@dataclass(frozen=True)
class PagePolicy:
    """When the controller closes a row that no queued request needs."""

    id: int  # what the compiled loop switches on
    summary: str


PAGE_POLICIES = {
    "open": PagePolicy(0, "rows stay open until a request to another row closes them"),
    "closed": PagePolicy(1, "a row closes with its last queued hit (auto-precharge)"),
    "timeout": PagePolicy(2, "rows idle for controller.page_timeout_cycles are closed"),
}
