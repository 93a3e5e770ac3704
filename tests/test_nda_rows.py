"""NDAs do not thrash the host's rows (issue 48, item 6; the rule: docs/reference/nda.md,
section 2, rules 5 and 6): an NDA opens a row only where it can use it before the host
needs the bank. Measured as the run reports it (``nda.row_commands``: NDA column
commands per NDA ACT, NDA ACTs whose row closed before an NDA column command used it,
NDA PREs of rows the host opened) and, apart from the engine's counters, from the
command log (``log_row_commands``).

Device: DDR4-2400R x8 8 Gb, refresh off, one rank, AXPY over two 16 KiB vectors beside a
uniformly random host (30 % writes) that keeps the rank busy without filling its
queues. Without the rule (before it, measured on the same case) the NDA made 70 ACTs
for its 768 column commands, 45 of them unused, and 519 PREs of host rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from helpers import read_log, resolve, trace, violations

from memsim import config, nda, sim

CASE = ("dram.refresh=false", "dram.ranks=1", "nda.enabled=true", "nda.kernel=AXPY",
        "nda.vector_bytes=16384")


def log_row_commands(log: pd.DataFrame) -> dict:
    """NDA ACTs, NDA column commands, NDA ACTs whose row a PRE, PREA, RDA or WRA (either
    source) closed before an NDA column command used it, NDA PREs of rows a host ACT
    opened: from the command log alone."""
    opener, used = {}, {}
    acts = columns = unused = host_pres = 0
    for ch, rk, bg, ba, cmd, src in log[["channel", "rank", "bankgroup", "bank", "command",
                                         "source"]].itertuples(index=False):
        if cmd == "PREA":
            for k in [k for k in opener if k[:2] == (ch, rk)]:
                unused += opener.pop(k) == "nda" and not used[k]
            continue
        k = (ch, rk, bg, ba)
        if cmd == "ACT":
            opener[k], used[k] = src, False
            acts += src == "nda"
        elif cmd in ("RD", "WR") and src == "nda":
            columns += 1
            used[k] = True
        if cmd in ("PRE", "RDA", "WRA"):
            o = opener.pop(k, None)
            unused += o == "nda" and not used[k]
            host_pres += cmd == "PRE" and src == "nda" and o == "host"
    return {"acts": acts, "columns": columns, "unused_acts": unused, "host_row_pres": host_pres}


def run_case(tmp_path, timed_every):
    a, w, c = trace("random", 1000, seed=1, write_ratio=0.3, timed_every=timed_every)
    cfg = config.load(None, CASE)
    path = tmp_path / "cmd.csv"
    result = sim.run_arrays(np.asarray(a, np.int64), w, c, cfg, cmd_log=path, progress=False)
    assert violations(path, cfg) == []
    return result, result.summary(), read_log(path), cfg


def test_an_nda_beside_a_busy_host_opens_only_rows_it_uses(tmp_path):
    _, s, log, cfg = run_case(tmp_path, 8)
    n = s["nda"]
    assert n["requests"] == {"reads": 512, "writes": 256}  # the whole kernel, once
    assert log_row_commands(log) == {"acts": 18, "columns": 768, "unused_acts": 0,
                                     "host_row_pres": 29}
    assert n["commands"]["ACT"] == 18
    assert n["row_commands"] == {"columns_per_act": 768 / 18, "unused_acts": 0,
                                 "host_row_pres": 29}
    bound = nda.host_delay_bound(resolve(cfg)[1], "host_first")["request"]
    assert n["host_delay_cycles"]["max"] <= bound


def test_the_engine_s_row_counters_are_the_command_log_s(tmp_path):
    # a host at half the rate: the NDA's rows still close under it now and then
    _, s, log, _ = run_case(tmp_path, 15)
    got = log_row_commands(log)
    assert got == {"acts": 100, "columns": 768, "unused_acts": 2, "host_row_pres": 119}
    rc = s["nda"]["row_commands"]
    assert (rc["unused_acts"], rc["host_row_pres"]) == (got["unused_acts"],
                                                          got["host_row_pres"])
    assert rc["columns_per_act"] == got["columns"] / got["acts"]


def test_the_text_summary_states_the_nda_s_row_commands(tmp_path):
    r, s, _, _ = run_case(tmp_path, 15)
    rows = [line for line in r.table().splitlines() if line.startswith("NDA row buffer")]
    assert len(rows) == 1
    assert rows[0].endswith("ACT 100  PRE 119; 7.7 columns per ACT, 2 ACTs unused, "
                            "119 PREs of host rows")
    frame = r.nda_per_rank()
    assert list(frame["activates_unused"]) == [2]
    assert list(frame["precharges_host_rows"]) == [119]
