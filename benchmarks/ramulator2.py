"""memsim against Ramulator 2 on the same trace, per standard, with matched timings.

    python benchmarks/ramulator2.py --ramulator2 DIR [--python PY] [-n 200000]
        [--standards DDR5,DDR4,LPDDR5,LPDDR5-pb,HBM3,HBM3-pb]
        [--kinds random,mix,stream,random+w,mix+w]
        [--tree TREE ...] [--csv OUT]

For each standard and trace kind (``memsim trace gen KIND -n N``, every request offered at
once; ``KIND+w``: one third writes), one channel (DDR5: one 32-bit sub-channel) of one
rank (HBM3: one pseudo-channel of one SID, 32 B requests; HBM3x2: both pseudo-channels of
a channel, sharing its command buses and its queues: memsim's ``dram.ranks: 2``), FR-FCFS, open
page, all-bank refresh (``LPDDR5-pb``: LPDDR5 with per-bank refresh, memsim's
``dram.refresh_mode: per_bank`` against Ramulator 2's ``PerBank`` refresh manager;
``HBM3-pb``: HBM3's against its ``HBM34PerBankRefresh``),
32-entry read and write queues with the
write drain at 80 % / 20 %, row-bank-rank-column-channel address mapping in both
(memsim's ``ro-ba-bg-ra-co-ch``, Ramulator 2's ``RoBaRaCoCh``). Ramulator 2 runs with
its preset's timings overridden by memsim's resolved ones (CL, CWL, tRCD, tRP, tRAS,
tRC, tWR, tRTP, tPPD, tCCD_S/L, tCCD_L_WR, tRRD_S/L, tWTR_S/L, tFAW, tRFC, tREFI, the
rank switch; per-bank refresh: tRFCpb, tpbR2pbR, tpbR2act and tREFIpb = tREFI / 8, on
HBM3 tRFCpb, tRREFD and tREFIpb = tREFI / 16), so
that what differs is the rules and the scheduler, not the numbers.
Prints cycles per request of each and memsim's difference, and from memsim's command
log the counts the DDR5 rules are about: PRE / PREA pairs of a rank closer than tPPD,
PREs at exactly ACT + tRAS of their bank, the shortest read-to-write gap of a rank, and
ACTs per REF (per-bank refresh: per REFpb). With per-bank refresh it also records
Ramulator 2's command log (its ``CmdTraceRecorder`` plugin) and prints, for both
simulators, what each REFpb cost while it waited: REFpb issued, the mean cycles from its
falling due (every tREFIpb) to its issue, and the column commands issued in those waits
(``refpb_waits``). ``LPDDR5-off`` runs both without refresh (memsim's ``dram.refresh:
false``, Ramulator 2's ``NoRefresh``), ``HBM3-off`` likewise: the base the refresh modes'
costs are measured from.
``HBM3x2-pb`` is HBM3x2 with per-bank refresh (each pseudo-channel's REFpb on its
own; ``refpb_waits`` per pseudo-channel).
``HBM3x2-rq41`` is HBM3x2 with memsim's read queue at 41 entries, an ablation for
random reads: Ramulator 2 moves an activated request out of its 32-entry read buffer.
``LPDDR5-bl16`` runs LPDDR5 with BL16 (memsim's ``dram.org: x16_bg_bl16``) against
Ramulator 2's LPDDR5 at its own BL16, 32 B requests in both: each of the trace's n / 2
lines as two requests, at a and a + 32.

``--tree`` runs memsim from other checkouts too (each as PYTHONPATH, e.g. before and
after a change): a row per tree. Build Ramulator 2 yourself (benchmarks/anchors.py
says how); DIR holds ``python/ramulator`` with its compiled bindings.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# memsim preset and the Ramulator 2 DRAM of each standard: its org and timing presets
# and the name of each timing in Ramulator 2's table (memsim name -> Ramulator name)
_DDR4_NAMES = dict(CL="nCL", CWL="nCWL", tRCD="nRCD", tRP="nRP", tRAS="nRAS", tRC="nRC",
                  tWR="nWR", tRTP="nRTP", tCCD_S="nCCDS", tCCD_L="nCCDL", tRRD_S="nRRDS",
                  tRRD_L="nRRDL", tWTR_S="nWTRS", tWTR_L="nWTRL", tFAW="nFAW", tRFC="nRFC",
                  tREFI="nREFI", tRTRS="nCS")
_HBM3_NAMES = dict(CL="nCL", CWL="nCWL", tRCDRD="nRCDRD", tRCDWR="nRCDWR", tRP="nRP",
                   tRAS="nRAS", tRC="nRC", tWR="nWR", tRTP="nRTP", tCCD_S="nCCDS",
                   tCCD_L="nCCDL", tCCD_R="nCCDR", tRRD_S="nRRDS", tRRD_L="nRRDL",
                   tWTR_S="nWTRS", tWTR_L="nWTRL", tRTW="nRTW", tFAW="nFAW", tPPD="nPPD",
                   tRFC="nRFC", tREFI="nREFI", tBL="nBL")
CASES = {
    "DDR4": dict(
        preset="ddr4_2400_x8_1ch1r", overrides=("mapping.order=ro-ba-bg-ra-co-ch",),
        dram="DDR4", org="DDR4_8Gb_x8", timing="DDR4_2400R", names=_DDR4_NAMES, extra={},
    ),
    # LPDDR5: Ramulator 2's LPDDR5 controller with WCK always on (memsim's model: no CAS
    # before a column command), its BL16 timings replaced by memsim's BL32 ones (burst
    # 4 CK = BL/n_min, column cycle 8 CK = BL/n_max), its read-to-precharge by memsim's
    # tBL + tRTP; ACT-1 and ACT-2 are its own commands
    "LPDDR5": dict(
        preset="lpddr5_6400_bg_4ch", footprint="2GiB",  # (one 16 Gb channel)
        overrides=("dram.channels=1", "mapping.order=ro-ba-bg-ra-co-ch"),
        dram="LPDDR5", org="LPDDR5_16Gb_x16", timing="LPDDR5_6400",
        controller="LPDDR5", controller_args=dict(wck_sync_mode="always_on"),
        names=dict(CL="nCL", CWL="nCWL", tRCD="nRCD", tRP="nRP", tRPab="nRPab", tRAS="nRAS",
                   tRC="nRC", tWR="nWR", tPPD="nPPD", tCCD_S="nCCDS", tCCD_L="nCCDL",
                   tRRD_S="nRRDS", tRRD_L="nRRDL", tWTR_S="nWTRS", tWTR_L="nWTRL",
                   tFAW="nFAW", tRFC="nRFC", tREFI="nREFI", tRTRS="nCS", tBL="nBL_min"),
        extra=dict(nCCDS_WR="tCCD_S", nCCDL_WR="tCCD_L", nBL_max="tCCD_L"),
        derived=dict(nRTP=("tBL", "tRTP")),
    ),
    # HBM3: one pseudo-channel in both (Ramulator 2's HBM34 controller with its org's
    # pseudochannel count set to 1, so that no second pseudo-channel shares the command
    # buses), one SID; 32 B requests (its transaction: 32 bits x BL8). Ramulator 2 counts
    # half-cycle ticks (tick_multiplier 2): its cycles are halved
    "HBM3": dict(
        preset="hbm3_6400_1pc", footprint="256MiB", overrides=(),
        dram="HBM3", org="HBM3_4Gb", timing="HBM3_6400Mbps", controller="HBM34",
        names=_HBM3_NAMES,
        extra={}, fixed=dict(pseudochannel=1), ticks_per_cycle=2,
    ),
    # HBM3, both pseudo-channels of a channel (memsim's two ranks), on its shared row and
    # column buses, with one 32-entry read and one write queue for the channel in both
    "HBM3x2": dict(
        preset="hbm3_6400_1pc", footprint="512MiB", overrides=("dram.ranks=2",),
        dram="HBM3", org="HBM3_4Gb", timing="HBM3_6400Mbps", controller="HBM34",
        names=_HBM3_NAMES,
        extra={}, ticks_per_cycle=2,
    ),
    # HBM3x2 with a 41-entry read queue: Ramulator 2 moves a request out of its read
    # buffer into an active buffer (a slot per bank) when its ACT issues, so it chooses
    # from its 32 entries plus the activated ones (8.6 on average on random reads, from its
    # command log), where memsim's 32 hold both: an ablation on reads, not a preset
    "HBM3x2-rq41": dict(
        preset="hbm3_6400_1pc", footprint="512MiB",
        overrides=("dram.ranks=2", "controller.read_queue=41"),
        dram="HBM3", org="HBM3_4Gb", timing="HBM3_6400Mbps", controller="HBM34",
        names=_HBM3_NAMES,
        extra={}, ticks_per_cycle=2,
    ),
    "DDR5": dict(
        preset="ddr5_4800b_x8_1dimm",
        overrides=("dram.channels=1", "mapping.order=ro-ba-bg-ra-co-ch"),
        dram="DDR5", org="DDR5_16Gb_x8", timing="DDR5_4800BN",
        names=dict(CL="nCL", CWL="nCWL", tRCD="nRCD", tRP="nRP", tRAS="nRAS", tRC="nRC",
                   tWR="nWR", tRTP="nRTP", tPPD="nPPD", tCCD_S="nCCDS", tCCD_L="nCCDL",
                   tCCD_L_WR="nCCDL_WR", tRRD_S="nRRDS", tRRD_L="nRRDL", tWTR_S="nWTRS",
                   tWTR_L="nWTRL", tFAW="nFAW", tRFC="nRFC", tREFI="nREFI", tRTRS="nCS"),
        extra=dict(nCCDS_WR="tCCD_S"),
    ),
}
# LPDDR5 with per-bank refresh: memsim's REFpb refreshes a bank pair (JESD209-5B,
# bank-group mode), Ramulator 2's one bank (its REFpb targets a single bank; its PerBank
# manager sends one every nREFIpb, the 16 banks in turn); and LPDDR5 without refresh
CASES["LPDDR5-pb"] = dict(
    CASES["LPDDR5"], refresh="PerBank",
    overrides=CASES["LPDDR5"]["overrides"] + ("dram.refresh_mode=per_bank",),
    names=dict(CASES["LPDDR5"]["names"], tRFCpb="nRFCpb", tPBR2PBR="nPBR2PBR",
               tPBR2ACT="nPBR2ACT"),
    divided=dict(nREFIpb=("tREFI", 8)))
# HBM3 with per-bank refresh: a REFpb to one bank, 16 a tREFI, in both; Ramulator 2's
# HBM34PerBankRefresh sends one every nREFIpb, the banks in turn, and starts a set
# nRFCpb after the last REFpb of the one before
CASES["HBM3-pb"] = dict(
    CASES["HBM3"], refresh="HBM34PerBankRefresh", per_bank_units=16,
    overrides=CASES["HBM3"]["overrides"] + ("dram.refresh_mode=per_bank",),
    names=dict(CASES["HBM3"]["names"], tRFCpb="nRFCpb", tRREFD="nRREFD"),
    divided=dict(nREFIpb=("tREFI", 16)))
CASES["LPDDR5-pb"]["per_bank_units"] = 8
# both pseudo-channels of a channel with per-bank refresh, each refreshed on its own
CASES["HBM3x2-pb"] = dict(
    CASES["HBM3x2"], refresh="HBM34PerBankRefresh", per_bank_units=16,
    overrides=CASES["HBM3x2"]["overrides"] + ("dram.refresh_mode=per_bank",),
    names=CASES["HBM3-pb"]["names"], divided=CASES["HBM3-pb"]["divided"])
CASES["HBM3-off"] = dict(CASES["HBM3"], refresh="NoRefresh",
                         overrides=CASES["HBM3"]["overrides"] + ("dram.refresh=false",))
CASES["LPDDR5-off"] = dict(CASES["LPDDR5"], refresh="NoRefresh",
                           overrides=CASES["LPDDR5"]["overrides"] + ("dram.refresh=false",))
# LPDDR5 with BL16: memsim's x16_bg_bl16 (32 B requests) against Ramulator 2's LPDDR5 as
# it is, BL16 (its transaction 16 bits x BL16 = 32 B), with memsim's timings (the same
# numbers at 6400: nBL_min 2, nBL_max 4, nCCDS 2, nCCDL 4, nRTP = tBL + tRTP = 8); the
# trace's n / 2 lines each as two 32 B requests, at a and a + 32 (split)
CASES["LPDDR5-bl16"] = dict(CASES["LPDDR5"], split=2,
                            overrides=CASES["LPDDR5"]["overrides"] + ("dram.org=x16_bg_bl16",))

RAMULATOR_RUN = '''
import json, sys
import ramulator
trace, dram, org, timing = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
over, controller, ctrl_args = json.loads(sys.argv[5]), sys.argv[6], json.loads(sys.argv[7])
refresh, cmd_log = sys.argv[8], sys.argv[9]
plugins = ([ramulator.controller_plugin.CmdTraceRecorder(path=cmd_log)] if cmd_log else [])
frontend = ramulator.frontend.LoadStoreTrace(clock_ratio=1, path=trace)
ctrl = getattr(ramulator.controller, controller)(**ctrl_args,
    dram=getattr(ramulator.dram, dram)(org_preset=org, timing_preset=timing, **over),
    scheduler=ramulator.scheduler.FRFCFS(),
    refresh_manager=getattr(ramulator.refresh_manager, refresh)(),
    row_policy=ramulator.row_policy.Open(),
    addr_mapper=ramulator.addr_mapper.RoBaRaCoCh(), controller_plugins=plugins)
mem = ramulator.memory_system.GenericDRAM(clock_ratio=1, controllers=[ctrl],
    channel_mapper=ramulator.channel_mapper.CacheLineInterleave())
sim = ramulator.Simulation(frontend, mem)
sim.run()
c = sim.stats["memory_system"]["controller"]
cs = c if isinstance(c, list) else [c]
print("cycles", max(x["cycles"] for x in cs))
'''

MEMSIM_RUN = '''
import json, sys
from memsim import config
from memsim.sim import run
from memsim.dram import spec
preset, trace, log, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
over = json.loads(sys.argv[5])
r = run(trace, preset, over, cmd_log=log)
s = r.summary()
t = spec.build(config.load(preset, over)).timings
json.dump(dict(cycles=s["cycles"], timings={k: int(v) for k, v in t.items()}), open(out, "w"))
'''


def traces(kind: str, n: int, work: Path, footprint: str) -> tuple[Path, Path]:
    """``KIND`` or ``KIND+w`` (one third writes), addresses in [0, footprint)."""
    native, ram = work / f"{kind}.trace", work / f"{kind}.r2"
    wr = ["--write-ratio", "0.333"] if kind.endswith("+w") else []
    wr += ["--footprint", footprint]
    kind = kind.removesuffix("+w")
    for path, fmt in ((native, "native"), (ram, "ramulator2")):
        subprocess.run([sys.executable, "-m", "memsim", "trace", "gen", kind, "-n", str(n),
                        "-o", str(path), "--format", fmt, "-q", *wr], check=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return native, ram


def split_lines(path: Path, parts: int) -> None:
    """Each request of a trace as ``parts`` requests of 64 / ``parts`` bytes, one after the
    other (a 64-byte line as LPDDR5 BL16's two 32-byte bursts)."""
    step = 64 // parts
    out = [f"{op} {int(addr, 16) + k * step:#x}"
           for op, addr in (line.split() for line in path.read_text().splitlines())
           for k in range(parts)]
    path.write_text("\n".join(out) + "\n")


def log_counts(log: Path, t: dict) -> dict:
    """The command-log counts of the rules in question (module docstring)."""
    import pandas as pd

    df = pd.read_csv(log, comment="#")
    rank = df["channel"] * 64 + df["rank"]
    pre = df[df.command.isin(["PRE", "PREA"])]
    pre_rank = rank[pre.index]
    close = 0
    last: dict = {}
    for cyc, r in zip(pre["cycle"], pre_rank, strict=True):
        if r in last and cyc - last[r] < t.get("tPPD", 2):
            close += 1
        last[r] = cyc
    # PREs at exactly ACT + tRAS of their bank
    at_tras = 0
    act_at: dict = {}
    for row in df.itertuples():
        key = (row.channel, row.rank, row.bankgroup, row.bank)
        if row.command == "ACT":
            act_at[key] = row.cycle
        elif row.command == "PRE" and act_at.get(key) is not None:
            at_tras += row.cycle - act_at[key] == t["tRAS"]
    col = df[df.command.isin(["RD", "RDA", "WR", "WRA"])]
    rd_wr = [b - a for (a, ca), (b, cb) in zip(
        zip(col["cycle"], col["command"], strict=True),
        list(zip(col["cycle"], col["command"], strict=True))[1:], strict=False)
        if ca.startswith("RD") and cb.startswith("WR")]
    refs = int(df.command.isin(["REF", "REFpb"]).sum())
    acts = int((df.command == "ACT").sum())
    return dict(pre_pairs_within_tPPD=close, pre_at_act_plus_tRAS=at_tras,
                min_rd_to_wr=min(rd_wr) if rd_wr else None, acts=acts, refs=refs)


def refpb_waits(df, interval: int) -> dict:
    """What each REFpb cost while it waited (module docstring): the k-th REFpb of a rank
    (HBM3: of a pseudo-channel) falls due at (k + 1) x ``interval``; its wait runs from
    then to its issue, and the rank's column commands in it are counted."""
    waits, inside = [], 0
    for _, own in df.groupby("rank"):
        refs = own[own.command == "REFpb"]["cycle"].to_numpy()
        cols = own[own.command.isin(["RD", "RDA", "WR", "WRA"])]["cycle"].to_numpy()
        due = interval * (1 + np.arange(len(refs)))
        waits.append(np.maximum(refs - due, 0))
        inside += sum(int(((cols >= d) & (cols < r)).sum())
                      for d, r in zip(due, refs, strict=True))
    waits = np.concatenate(waits) if waits else np.zeros(0)
    if len(waits) == 0:
        return {}
    return dict(refpb=len(waits), refpb_wait_mean=round(float(waits.mean()), 1),
                wait_cycles=int(waits.sum()), columns_in_waits=inside)


def ramulator_log(path: Path, ticks_per_cycle: int = 1):
    """Ramulator 2's command log (CmdTraceRecorder, one channel) on memsim's clock: its
    clock 1 is memsim's cycle 0 (HBM3's half-cycle ticks: its tick 2c + 1 is cycle c)."""
    import pandas as pd

    df = pd.read_csv(f"{path}.ch0")
    df["cycle"] = (df["clock"] - 1) / ticks_per_cycle
    # memsim's rank: HBM3's pseudo-channel, else the rank (one in every case here)
    df["rank"] = df["PseudoChannel"] if "PseudoChannel" in df else df.get("Rank", 0)
    return df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ramulator2", type=Path, required=True)
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter that imports Ramulator 2's bindings")
    ap.add_argument("-n", type=int, default=200_000)
    ap.add_argument("--standards", default="DDR5")
    ap.add_argument("--kinds", default="random,mix,stream,random+w,mix+w")
    ap.add_argument("--tree", action="append", type=Path, default=[],
                    help="another checkout of memsim to run too (repeatable)")
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args()
    trees = [ROOT] + args.tree
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "ram.py").write_text(RAMULATOR_RUN)
        (work / "memsim_run.py").write_text(MEMSIM_RUN)
        for std in args.standards.split(","):
            case = CASES[std]
            for kind in args.kinds.split(","):
                parts = case.get("split", 1)
                native, ram = traces(kind, args.n // parts, work, case.get("footprint", "4GiB"))
                for path in (native, ram) if parts > 1 else ():
                    split_lines(path, parts)
                results = []
                for i, tree in enumerate(trees):
                    log, out = work / f"log{i}.csv", work / f"out{i}.json"
                    subprocess.run([sys.executable, str(work / "memsim_run.py"),
                                    case["preset"], str(native), str(log), str(out),
                                    json.dumps(list(case["overrides"]))], check=True,
                                   env=dict(os.environ, PYTHONPATH=str(tree)))
                    res = json.loads(out.read_text())
                    res["counts"] = log_counts(log, res["timings"])
                    if case.get("per_bank_units"):
                        import pandas as pd

                        res["waits"] = refpb_waits(pd.read_csv(log, comment="#"),
                                                   res["timings"]["tREFI"]
                                                   // case["per_bank_units"])
                    results.append(res)
                t = results[0]["timings"]
                over = {r: t[m] for m, r in case["names"].items() if m in t}
                over.update({r: t[m] for r, m in case["extra"].items()})
                over.update({r: sum(t[m] for m in ms)
                             for r, ms in case.get("derived", {}).items()})
                over.update({r: t[m] // d for r, (m, d) in case.get("divided", {}).items()})
                over.update(case.get("fixed", {}))
                env = dict(os.environ, PYTHONPATH=str(args.ramulator2 / "python"))
                per_bank = bool(case.get("per_bank_units"))
                ram_log = work / "ram_cmds.csv"
                proc = subprocess.run([args.python, str(work / "ram.py"), str(ram),
                                       case["dram"], case["org"], case["timing"],
                                       json.dumps(over), case.get("controller", "GenericDDR"),
                                       json.dumps(case.get("controller_args", {})),
                                       case.get("refresh", "AllBank"),
                                       str(ram_log) if per_bank else ""],
                                      capture_output=True, text=True,
                                      env=env, cwd=work)
                if proc.returncode:
                    sys.exit(proc.stderr[-2000:])
                ram_cycles = (int(re.search(r"cycles (\d+)", proc.stdout).group(1))
                              / case.get("ticks_per_cycle", 1))
                ram_waits = refpb_waits(ramulator_log(ram_log,
                                                      case.get("ticks_per_cycle", 1)),
                                        over["nREFIpb"]) if per_bank else {}
                for tree, res in zip(trees, results, strict=True):
                    row = dict(standard=std, kind=kind, tree=str(tree), n=args.n,
                               memsim_cpr=res["cycles"] / args.n,
                               ramulator2_cpr=ram_cycles / args.n,
                               diff_pct=100 * (res["cycles"] / ram_cycles - 1), **res["counts"])
                    rows.append(row)
                    print(f"{std:5} {kind:7} {Path(tree).name:12} memsim {row['memsim_cpr']:.4f}"
                          f"  ramulator2 {row['ramulator2_cpr']:.4f} cycles/request"
                          f"  ({row['diff_pct']:+.2f} %)  {res['counts']}", flush=True)
                    if per_bank:
                        row.update({f"memsim_{k}": v for k, v in res["waits"].items()})
                        row.update({f"ramulator2_{k}": v for k, v in ram_waits.items()})
                        print(f"      refpb_waits: memsim {res['waits']}  ramulator2 "
                              f"{ram_waits}", flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
