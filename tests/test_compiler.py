"""memsim.engine.compiler: the engine's numba pipeline computes what numba's does.

The liveness analysis against numba's on random control-flow graphs; the SSA
reconstruction against numba's on the IR of the engine's own functions; the tuple
lowering against numba's on a small function over a state tuple (the same machine code
and the same result). The engine's command logs before and after are compared by
benchmarks/ab_logs.py."""

from __future__ import annotations

import copy
import re
from collections import namedtuple

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
