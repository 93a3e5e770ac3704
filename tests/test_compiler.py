"""memsim.engine.compiler: the engine's numba pipeline computes what numba's does.

The liveness analysis against numba's on random control-flow graphs; the SSA
reconstruction against numba's on the IR of the engine's own functions; the tuple
lowering against numba's on a small function over a state tuple (the same machine code
and the same result). The engine's command logs before and after are compared by
benchmarks/ab_logs.py."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from numba.core import analysis, ssa
from numba.core.compiler import run_frontend
from numba.core.controlflow import CFGraph

from memsim.engine import compiler, controller, device, layout, loop, nda, schedule, subbank

pytestmark = pytest.mark.skipif(not compiler.OPTIONS, reason="numba lacks the internals")
ROOT = Path(__file__).resolve().parent.parent


def _env(tmp_path) -> dict:
    """memsim in a subprocess, with a numba cache of its own (bounds checks compile
    other code than the tests' cache holds)."""
    return dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "numba"))


@st.composite
def flow_graphs(draw):
    """A control-flow graph whose nodes all hang off node 0 (forward edges from a
    chain, plus random forward and backward edges: loops), and random use / def sets
    over a few variables per block."""
    n = draw(st.integers(1, 24))
    edges = {(i, i + 1) for i in range(n - 1) if draw(st.booleans()) or i == 0}
    for i in range(1, n):  # every node reachable: an edge from some earlier node
        if not any(b == i for _, b in edges):
            edges.add((draw(st.integers(0, i - 1)), i))
    for _ in range(draw(st.integers(0, 2 * n))):
        edges.add((draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))))
    names = [f"v{i}" for i in range(draw(st.integers(1, 12)))]
    sets = st.sets(st.sampled_from(names), max_size=len(names))
    use = {b: draw(sets) for b in range(n)}
    define = {b: draw(sets) for b in range(n)}
    return n, sorted(edges), use, define


@settings(max_examples=300, deadline=None)
@given(flow_graphs())
def test_live_map_is_numbas(graph):
    n, edges, use, define = graph
    cfg = CFGraph()
    for b in range(n):
        cfg.add_node(b)
    for a, b in edges:
        cfg.add_edge(a, b)
    cfg.set_entry_point(0)
    cfg.process()
    blocks = dict.fromkeys(range(n))
    want = analysis.compute_live_map(cfg, blocks, copy.deepcopy(use), copy.deepcopy(define))
    assert compiler.compute_live_map(cfg, blocks, use, define) == want


def _dump(blocks) -> str:
    return "\n".join(f"{label}:\n" + "\n".join(map(str, block.body))
                     for label, block in blocks.items())


@pytest.mark.parametrize("function", [
    loop.make_loop(layout.F_NDA | layout.F_CORES).py_func,  # the loop before inlining
    device.apply_constraints.py_func, schedule.schedule_channel.py_func,
    controller.issue_column.py_func, device.all_bank_refresh.py_func, device.heap_pop.py_func,
    subbank.schedule_channel.py_func, nda.step.py_func,
], ids=lambda f: f.__qualname__)
def test_ssa_is_numbas(function):
    blocks = run_frontend(function).blocks
    want = ssa._run_ssa(copy.deepcopy(blocks))
    got = compiler.run_ssa(copy.deepcopy(blocks))
    assert list(got) == list(want)
    assert _dump(got) == _dump(want)


State = namedtuple("State", "a b c")


@njit(inline="always", _nrt=False)
def _bump(S, i):
    S.a[i] += S.b[i] * 2
    S.c[i, 0] = S.a[i]


def _body(S, n):
    total = 0
    for i in range(n):
        _bump(S, i)
        total += S.c[i, 0]
    return total


def _machine_code(dispatcher) -> list:
    """The instructions of a compiled function (no assembler directives), with numba's
    numbering of symbols taken out."""
    (asm,) = dispatcher.inspect_asm().values()
    return [re.sub(r"B\d+v\d+B", "BvB", line) for line in asm.splitlines()
            if line.startswith("\t") and not line.startswith("\t.")]


def test_tuple_lowering_same_code_and_result():
    plain = njit(_nrt=False)(_body)
    ours = njit(_nrt=False, **compiler.OPTIONS)(_body)
    results = []
    for f in (plain, ours):
        S = State(np.arange(8, dtype=np.int64), np.ones(8, np.int64), np.zeros((8, 2), np.int64))
        results.append((f(S, 8), S.a.tolist(), S.c.tolist()))
    assert results[0] == results[1] == (sum(range(2, 10)), list(range(2, 10)),
                                        [[i, 0] for i in range(2, 10)])
    assert _machine_code(ours) == _machine_code(plain)


def _at(a, i):
    return a[i]


def test_engine_functions_index_as_is():
    """An engine function uses an integer index as it is: -1 is out of bounds (an
    IndexError under boundscheck), where numba, like Python, reads the last element;
    numba functions compiled with numba's own pipeline in the same process still count
    a negative index from the end."""
    a = np.arange(5, dtype=np.int64)
    ours = njit(_nrt=False, boundscheck=True, **compiler.OPTIONS)(_at)
    assert ours(a, 4) == 4
    with pytest.raises(IndexError):
        ours(a, -1)
    assert njit(_at)(a, -1) == 4
    assert njit(boundscheck=True)(_at)(a, -5) == 0


def test_engine_never_indexes_below_zero(tmp_path):
    """The plain loop run with numba's bounds checks on (NUMBA_BOUNDSCHECK=1, in a
    process of its own with a cache of its own; LLVM level 0, the cheapest compile): a
    negative index anywhere in it would be an IndexError (the test above), so a clean run
    of random reads and writes at two ranks, with refresh and the command log, shows none
    was taken. Every loop variant was run so on benchmarks/ab_logs.py's cases when the
    indexing changed."""
    trace = tmp_path / "t.trace"
    assert subprocess.run([sys.executable, "-m", "memsim", "trace", "gen", "random", "-n",
                           "10000", "--write-ratio", "0.33", "-o", trace], cwd=ROOT,
                          env=_env(tmp_path), capture_output=True).returncode == 0
    out = subprocess.run([sys.executable, "-m", "memsim", "run", trace, "-c",
                          "ddr4_2400_x8_1ch1r", "-p", "dram.ranks=2", "--cmd-log",
                          tmp_path / "cmd.csv", "--check", "--json", tmp_path / "r.json",
                          "-q"], cwd=ROOT,
                         env=dict(_env(tmp_path), NUMBA_BOUNDSCHECK="1", NUMBA_OPT="0"),
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads((tmp_path / "r.json").read_text())["requests"]["total"] == 10000
