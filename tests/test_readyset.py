"""The ready sets (memsim.engine.readyset) against the bank phase they replace: at every
decision of a run, the ready-set phase lists the same (bank, command) pairs as
``schedule.bank_phase`` computed afresh on the same state, and forecasts a cycle after the
decision and no later than its forecast (earlier only from a stale lower bound).
Checked in plain Python (NUMBA_DISABLE_JIT=1), where both phases can be called side by
side; the compiled loops' command logs equal the old loop's (benchmarks/ab_logs.py)."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = """
import json, sys
from memsim import sim
from memsim.engine import controller, layout, schedule, readyset
from memsim.trace import generate

seen = {"decisions": 0, "ready": 0, "earlier": 0}
rs_phase = readyset.bank_phase


def checked(P, S, X, ch, t, q, features):
    n_old, nxt_old = schedule.bank_phase(P, S, X, ch, t, q, features)
    old = sorted(zip(S.ready_bank[ch, :n_old].tolist(), S.ready_hit[ch, :n_old].tolist()))
    n, nxt = rs_phase(P, S, X, ch, t, q, features)
    new = sorted(zip(S.ready_bank[ch, :n].tolist(), S.ready_hit[ch, :n].tolist()))
    assert new == old, (t, ch, q, new, old)
    assert t < nxt <= nxt_old, (t, ch, q, nxt, nxt_old)
    seen["decisions"] += 1
    seen["ready"] += int(n)
    seen["earlier"] += int(nxt < nxt_old)
    return n, nxt


readyset.bank_phase = checked
preset, kind, write_ratio, overrides = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]
_, w, a = generate(kind, 1500, seed=5, write_ratio=write_ratio, footprint_bytes=1 << 30)
sim.run_arrays(a, w, None, preset, overrides)
print(json.dumps(seen))
"""

CASES = [
    # one rank, FR-FCFS with its row-hit cap (the PRE rule reads the bypass count)
    ("ddr4_2400_x8_1ch1r", "random", 0.3,
     ["controller.scheduler=frfcfs_cap", "dram.timing.tREFI=700"]),
    # four ranks (rank parts, other-rank rules), closed page (auto-precharge closes)
    ("ddr4_2400_x8_1ch1r", "random", 0.0,
     ["dram.ranks=4", "controller.page_policy=closed"]),
    # two channels of two ranks, a mix with writes (both queues' sets), FCFS
    ("ddr4_3200_x8_2ch2r", "mix", 0.3, ["controller.scheduler=fcfs"]),
    # NDAs sharing the ranks: their commands mark banks, time slices block ranks
    ("ddr4_2400_x8_1ch2r_nda_axpy", "random", 0.3, ["nda.policy=time_slice"]),
]


@pytest.mark.parametrize("preset,kind,write_ratio,overrides", CASES,
                         ids=[c[0] + "-" + c[1] for c in CASES])
def test_ready_sets_match_the_bank_phase(preset, kind, write_ratio, overrides):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", SCRIPT, preset, kind, str(write_ratio),
                          *overrides], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    # the check ran on every decision of a run that found work ready
    assert seen["decisions"] > 1500 and seen["ready"] > 1500
