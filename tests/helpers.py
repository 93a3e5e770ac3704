"""Shared helpers for the engine, validation and CLI tests.

Device of the closed-form tests: DDR4-2400R, x8, 8 Gb (the default preset). Its timings
are spelled out once below, by name, so that every expected number in a test is an
expression over these names (``test_engine_closed_form`` checks that the simulator
resolves exactly these values).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd

from memsim import check, config, policies
from memsim.cmdlog import read_header
from memsim.dram import spec as spec_mod
from memsim.mapping import AddressMapping
from memsim.results import HOST_METRICS
from memsim.sim import run_arrays

# DDR4-2400R x8 8 Gb, in clock cycles (docs/reference/ddr4.md)
CL, tRCD, tRP, tRAS, tRC, CWL = 16, 16, 16, 39, 55, 12
tCCD_S, tCCD_L, tRRD_S, tRRD_L, tFAW = 4, 6, 4, 6, 26
tWTR_S, tWTR_L, tRTP, tWR = 3, 9, 9, 18
tRFC, tREFI, tBL, tRTRS = 421, 9364, 4, 2
TIMINGS_2400 = dict(CL=CL, tRCD=tRCD, tRP=tRP, tRAS=tRAS, tRC=tRC, CWL=CWL, tCCD_S=tCCD_S,
                    tCCD_L=tCCD_L, tRRD_S=tRRD_S, tRRD_L=tRRD_L, tFAW=tFAW, tWTR_S=tWTR_S,
                    tWTR_L=tWTR_L, tRTP=tRTP, tWR=tWR, tRFC=tRFC, tREFI=tREFI, tBL=tBL,
                    tRTRS=tRTRS)

PRESETS = ("ddr4_2400_x8_1ch1r", "ddr4_3200_x8_2ch2r")
# presets with an ECC scheme (tests/test_ecc.py runs them)
ECC_PRESETS = ("ddr4_2400_x4_1ch1r_chipkill", "ddr4_2400_x8_1ch1r_secded",
               "ddr4_3200_x8_2ch2r_lockstep")
# presets with near-data accelerators (test_nda.py runs them)
NDA_PRESETS = ("ddr4_2400_x8_1ch2r_nda_axpy", "ddr4_2400_x8_1ch4r_nda_dot")
# presets of the cores front end (tests/test_cores.py runs them)
CORES_PRESETS = ("ddr4_2400_x8_1ch1r_4cores",)
# DDR5 presets (tests/test_ddr5.py runs them)
DDR5_PRESETS = ("ddr5_4800b_x8_1dimm", "ddr5_5600b_x8_1dimm", "ddr5_4800b_x8_2dimm",
                "ddr5_5600b_x8_2dimm")
LPDDR5_PRESETS = ("lpddr5_5500_bg_4ch", "lpddr5_6400_bg_4ch", "lpddr5_6400_8b_4ch")
HBM3_PRESETS = ("hbm3_6400_1pc", "hbm3_6400_16pc")
# every scheduler of plain DDR4 (not those that need sub-banks) and every page policy
SCHEDULERS = tuple(n for n, s in policies.SCHEDULERS.items() if not s.conflict_aware)
PAGE_POLICIES = tuple(policies.PAGE_POLICIES)
NO_REFRESH = ("dram.refresh=false",)

# summary keys that measure the host, not the simulation
HOST_KEYS = HOST_METRICS

LOG_DTYPES = {"cycle": "int64", "channel": "int64", "rank": "int64", "bankgroup": "int64",
              "bank": "int64", "row": "int64", "column": "int64", "command": "string",
              "request": "int64", "source": "string", "subbank": "int64"}


def resolve(cfg=None, overrides=()):
    """(Config, DeviceSpec, AddressMapping) of a preset / dict plus overrides."""
    cfg = config.load(cfg, overrides)
    spec = spec_mod.build(cfg)
    return cfg, spec, AddressMapping.from_config(cfg, spec)


def addresses(mapping: AddressMapping, fields) -> np.ndarray:
    """Byte addresses of ``fields``: an iterable of dicts with any of the keys channel,
    rank, bankgroup, bank, row, column (DRAM columns, a multiple of 8)."""
    return np.array([int(mapping.encode(**f)) for f in fields], dtype=np.int64)


def read_log(path) -> pd.DataFrame:
    """A command log (after its header comment; its cycles are whole: commands issue on
    the rising clock edge)."""
    skip, _ = read_header(path)
    return pd.read_csv(path, dtype=LOG_DTYPES, skiprows=skip)


def log_body(path) -> str:
    """A command log without its header comment (the config differs between runs)."""
    with open(path) as f:
        return "".join(line for line in f if not line.startswith("#"))


def run_logged(tmp_path, addr, is_write=None, cycle=None, cfg=None, overrides=(),
               tick=False, name="cmd.csv", **kw):
    """Run with a command log; return (result, summary, log DataFrame, log path)."""
    path = tmp_path / name
    result = run_arrays(addr, is_write, cycle, cfg, overrides, tick=tick, cmd_log=path, **kw)
    return result, result.summary(), read_log(path), path


def sim_summary(result) -> dict:
    """The summary without the host-dependent keys (wall time)."""
    s = result.summary()
    for k in HOST_KEYS:
        s.pop(k)
    return s


def commands(log: pd.DataFrame, *names) -> pd.DataFrame:
    """Rows of the log whose command is one of ``names``."""
    return log[log["command"].isin(names)]


def stall(summary: dict, kind: str) -> dict:
    """Count and idle cycles of one turnaround kind (idle_ns is checked to be their
    conversion)."""
    d = summary["turnaround"][kind]
    assert d["idle_ns"] == round(d["idle_cycles"] * summary["tck_ns"], 4)
    return {"count": d["count"], "idle_cycles": d["idle_cycles"]}


def cycles_of(log: pd.DataFrame, *names) -> list[int]:
    return commands(log, *names)["cycle"].tolist()


def sequence(log: pd.DataFrame) -> list[tuple[int, str, int]]:
    """The log as (cycle, command, request) tuples: a readable spec in an assert."""
    return list(zip(log["cycle"].tolist(), log["command"].tolist(), log["request"].tolist(),
                    strict=True))


def _checker_args(c, spec) -> tuple[tuple, dict]:
    """The protocol checker's arguments for a config: its geometry and every rule set
    the config brings (refresh and its mode, the ECC interface, sub-banks, NDA modules,
    the standard)."""
    return ((spec.timings, spec.channels, spec.ranks, spec.bankgroups, spec.banks_per_group),
            dict(refresh=c.dram.refresh, interface=spec.ecc.checker(spec.timings),
                 subbank=check.subbank_rules(c), modules=check.modules_of(c),
                 standard=c.dram.standard, refresh_mode=c.dram.refresh_mode))


def banks_lost_twice(log) -> list[str]:
    """Every request whose own PRE was undone twice: the bank's next ACT after that PRE
    was for a request of the other direction (read / write, from its column command in
    the log). The controller lets that happen once (a PRE commits nothing, as in
    Ramulator 2), then holds the bank a request precharges again for it (engine/controller.py,
    ``resv_*``); without that, a write drain could take a read's bank at every drain,
    for ever. (A bank another request of its own direction precharged, or activated
    first, is no loss of its own: fcfs may serve an older request there first.)"""
    direction = {r: c[:2] for c, r in zip(log["command"], log["request"], strict=True)
                 if c in ("RD", "RDA", "WR", "WRA")}
    closed_by = {}  # bank -> the request whose PRE closed it, until the bank's next ACT
    lost = {}
    for t, cmd, req, ch, rk, bg, ba in zip(
            log["cycle"], log["command"], log["request"], log["channel"], log["rank"],
            log["bankgroup"], log["bank"], strict=True):
        key = (ch, rk, bg, ba)
        if cmd == "PRE" and req >= 0:  # (-1: the timeout policy's, for nobody)
            closed_by[key] = req
        elif cmd == "ACT" and key in closed_by:
            r = closed_by.pop(key)
            if r != req and direction.get(r) != direction.get(req):
                lost.setdefault(r, []).append(int(t))
    return [f"request {r}: the other direction activated its bank after its PREs, at "
            f"cycles {ts}" for r, ts in sorted(lost.items()) if len(ts) > 1]


def violations(path, cfg=None, overrides=()):
    """Protocol-checker violations of a command log under the given config."""
    c, spec, _ = resolve(cfg, overrides)
    args, rules = _checker_args(c, spec)
    return check.check_file(path, *args, **rules)


def protocol_check(path, cfg=None, overrides=(), keep: int = 3):
    """The protocol checker run over a command log under the given config: ``.total``
    violations, ``.counts`` per rule and the first ``keep`` in ``.violations``."""
    c, spec, _ = resolve(cfg, overrides)
    args, rules = _checker_args(c, spec)
    return check.check_log(path, *args, keep=keep, **rules)


# ---------------------------------------------------------------- synthetic traces

def trace(kind: str, n: int, seed: int = 0, write_ratio: float = 0.0,
          footprint_bytes: int = 1 << 30, timed_every: float | None = None):
    """A small synthetic trace made here (independent of memsim.trace.generate):
    (addr, is_write, cycle or None). Kinds: random, stream, mix (four interleaved
    streams), hot (few rows of few banks: many hits and conflicts)."""
    rng = np.random.default_rng(seed)
    lines = footprint_bytes // 64
    if kind == "random":
        line = rng.integers(0, lines, n)
    elif kind == "stream":
        line = np.arange(n) % lines
    elif kind == "mix":
        owner = rng.integers(0, 4, n)
        line = np.empty(n, np.int64)
        for s in range(4):
            mine = np.flatnonzero(owner == s)
            line[mine] = s * (lines // 4) + np.arange(len(mine))
    elif kind == "hot":
        # 64 lines in each of 8 rows spread 2 MiB apart: hits and conflicts everywhere
        line = rng.integers(0, 8, n) * (1 << 15) + rng.integers(0, 64, n)
    else:
        raise ValueError(kind)
    addr = (line % lines).astype(np.int64) * 64
    is_write = rng.random(n) < write_ratio
    cycle = None
    if timed_every is not None:
        cycle = np.floor(np.arange(n) * timed_every).astype(np.int64)
    return addr, is_write, cycle


def comparable(result) -> str:
    """The simulated part of a summary as canonical JSON (NaN compares equal to NaN)."""
    return json.dumps(sim_summary(result), sort_keys=True, default=str)


def conservation_errors(log: pd.DataFrame, addr, is_write, mapping: AddressMapping,
                        nda_cfg=None) -> list:
    """Why the command log does not serve every request exactly once, in its direction,
    at its decoded channel/rank/bank group/bank/row/column (empty list: it does). With
    near-data accelerators (``nda_cfg``, the config's nda section) the host's decoded
    banks are those of its layout (bank_partition folds them) and the log's NDA rows are
    left out."""
    s = mapping.spec
    d = mapping.decode(np.asarray(addr, np.int64))
    bank, row = d.bank, d.row
    if nda_cfg is not None and nda_cfg.enabled:
        from memsim import nda

        bank, row = nda.host_remap(bank, row, nda.Geometry(
            s.bankgroups, s.banks_per_group, s.rows, s.bursts_per_row,
            s.channels * s.ranks), nda_cfg)
    if "source" in log.columns:
        log = log[log["source"] == "host"]
    per_rank = s.bankgroups * s.banks_per_group
    sb = s.subbanks_per_bank  # with sub-banks the decoded "bank" is the unit
    unit, bank = bank, bank // sb
    want = pd.DataFrame({
        "channel": bank // (s.ranks * per_rank),
        "rank": (bank // per_rank) % s.ranks,
        "bankgroup": (bank // s.banks_per_group) % s.bankgroups,
        "bank": bank % s.banks_per_group,
        "row": row,
        "column": d.column,
    })
    if sb > 1:  # the log's subbank column (only with sub-banks)
        want["subbank"] = unit % sb
    errors = []
    col = commands(log, "RD", "RDA", "WR", "WRA")
    req = col["request"].to_numpy()
    n = len(want)
    counts = np.bincount(req[(req >= 0) & (req < n)], minlength=n)
    if (req < 0).any() or (req >= n).any():
        errors.append(f"column commands with request ids outside [0, {n}): "
                      f"{sorted(set(req[(req < 0) | (req >= n)].tolist()))[:5]}")
    if (counts != 1).any():
        bad = np.flatnonzero(counts != 1)[:5].tolist()
        errors.append(f"requests not served exactly once: {bad} "
                      f"(times served {counts[bad].tolist()})")
        return errors
    col = col.sort_values("request")
    writes = col["command"].isin(["WR", "WRA"]).to_numpy()
    wrong_dir = np.flatnonzero(writes != np.asarray(is_write, bool))
    if len(wrong_dir):
        errors.append(f"requests served in the wrong direction: {wrong_dir[:5].tolist()}")
    for name in want.columns:
        got = col[name].to_numpy()
        bad = np.flatnonzero(got != want[name].to_numpy())
        if len(bad):
            errors.append(f"{name} differs from the address decode for requests "
                          f"{bad[:5].tolist()}")
    # an ACT or a conflict PRE names the request it was issued for: same bank (and row
    # and sub-bank; a PRE may close a sibling sub-bank's row)
    for names, fields in ((("ACT",), list(want.columns[:5]) + ["subbank"] * (sb > 1)),
                          (("PRE",), list(want.columns[:4]))):
        rows = commands(log, *names)
        rows = rows[rows["request"] >= 0]
        exp = want.iloc[rows["request"].to_numpy()][fields].to_numpy()
        bad = np.flatnonzero((rows[fields].to_numpy() != exp).any(axis=1))
        if len(bad):
            errors.append(f"{names[0]} commands not at their request's bank/row: log rows "
                          f"{rows.index[bad][:5].tolist()}")
    return errors


def run_example(name: str):
    """Run ``examples/<name>.py``'s ``main(quiet=True)`` and return what it returns."""
    path = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main(quiet=True)


def default_signals() -> None:
    """``preexec_fn`` for a child that a test interrupts as a shell's Ctrl-C would: SIGINT
    at its default action and unblocked. A child inherits an ignored disposition and a
    blocked mask from the test process, and Python then installs no KeyboardInterrupt
    handler; in full-suite runs an xdist worker was seen to pass SIGINT on that way
    (the child exited 0 after the signal; which earlier test leaves it so is not known)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def simpy_replay(env, mem, cycle, is_write, addr, unit_tck=1.0):
    """A SimPy process making exactly the trace's requests at their cycles (``unit_tck``:
    the MemorySystem's time unit per trace cycle)."""
    for c, w, a in zip(cycle.tolist(), is_write.tolist(), addr.tolist(), strict=True):
        if c * unit_tck > env.now:
            yield env.timeout(c * unit_tck - env.now)
        (mem.write if w else mem.read)(a)
