"""pytest plugin: which tests use which loop variant, and which test compiled it.

    PYTHONPATH=$PWD:$PWD/benchmarks SUITE_COST_DIR=/tmp/variants \\
        python -m pytest -q -p suite_cost_plugin
    python benchmarks/suite_cost.py --tests /tmp/variants

Every process of the session (the xdist workers) records, per test, the loop variants
its engines used (the feature bits ``memsim.engine.loop.loop`` was asked for) and the
variants it compiled rather than loaded from numba's cache (``Engine.warm_up``, with
the CPU seconds it took), and writes them to ``SUITE_COST_DIR/<worker>.json`` when
its session ends. Subprocesses the tests start are not seen. Nothing of memsim's
behaviour changes: the two functions are wrapped, not replaced. memsim (and so numba)
is imported only when pytest configures itself, after tests/conftest.py has set the
test run's numba options, which numba reads when it is imported.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

_current = {"test": None}
_used: dict[str, set] = {}
_compiled: list[dict] = []


_original = {}  # (memsim's own loop and warm_up, set in pytest_configure)


def _misses(features: int) -> int:
    stats = getattr(_original["loop"](features), "stats", None)
    return sum(stats.cache_misses.values()) if stats is not None else 0


def _recording_loop(features: int = 0):  # (0: memsim.engine.layout.F_NONE)
    if _current["test"] is not None:
        _used.setdefault(_current["test"], set()).add(int(features))
    return _original["loop"](features)


def _recording_warm_up(self):
    before, cpu = _misses(self.features), time.process_time()
    try:
        return _original["warm_up"](self)
    finally:
        if _misses(self.features) > before:
            _compiled.append({"test": _current["test"], "features": int(self.features),
                              "cpu_s": time.process_time() - cpu})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current["test"] = item.nodeid
    try:
        return (yield)
    finally:
        _current["test"] = None


def pytest_configure(config):
    from memsim.engine import Engine, loop

    _original.update(loop=loop.loop, warm_up=Engine.warm_up)
    loop.loop = _recording_loop
    Engine.warm_up = _recording_warm_up


def pytest_sessionfinish(session):
    where = os.environ.get("SUITE_COST_DIR")
    if not where:
        return
    Path(where).mkdir(parents=True, exist_ok=True)
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(where, f"{name}.json").write_text(json.dumps(
        {"used": {t: sorted(f) for t, f in _used.items()}, "compiled": _compiled}, indent=1))
