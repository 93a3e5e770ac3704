"""Command-log A/B set: fingerprints of plain-DDR4 and mechanism runs, to prove a change
left the engine's decisions alone.

    PYTHONPATH=CHECKOUT python benchmarks/ab_logs.py -o before.json   # in the old tree
    PYTHONPATH=CHECKOUT python benchmarks/ab_logs.py -o after.json    # in the new tree
    python benchmarks/ab_logs.py --compare before.json after.json

Cases (3,000 requests each; traces: random, four streams, hot rows with 1/3 writes as
fast as possible; the mixed trace timestamped at one request every 3 cycles):

- ``plain``: 2 presets (1 channel 1 rank, 2 channels 2 ranks) x 3 schedulers x 3 page
  policies x 4 traces (the original 72);
- ``ranks``: the same at 4 ranks (one channel; and two channels, FR-FCFS open page), where
  the scheduler's per-bank work grows with the bank count;
- ``mech``: every loop variant of a mechanism (sub-banks: ERUCA, SALP-1, SALP-2, MASA;
  NDAs at 2 and 4 ranks; ECC: SEC-DED's decoder and in-line ECC's extra accesses) on the
  4 traces, open and closed page; closed-loop cores (alone and with ERUCA's sub-banks) on
  the shipped core traces, and with NDAs; the SimPy front door (the plain loop stepped,
  and the NDA loop) on the timed trace.

Each case records the SHA-256 of its command log (the CSV the engine writes, for plain
cases its first nine columns, so that columns added for other mechanisms do not count;
mechanism cases hash every column; the comment lines a log starts with, its version and
config, are skipped, so that logs of trees before and after that header compare) and of
the simulated part of its summary. ``--summary-keys`` restricts the summary fingerprint
to the given top-level keys (for changes that add metrics on purpose); ``--only`` runs
the cases whose name contains a given text (``ddr4_`` for the original 72, ``ranks/``,
``mech/``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent  # the checkout
PRESETS = ("ddr4_2400_x8_1ch1r", "ddr4_3200_x8_2ch2r")
SCHEDULERS = ("fcfs", "frfcfs", "frfcfs_cap")
POLICIES = ("open", "closed", "timeout")


def _traces(n: int = 3000, seed: int = 7):
    rng = np.random.default_rng(seed)
    lines = (1 << 30) // 64
    owner = rng.integers(0, 4, n)
    mix = np.empty(n, np.int64)
    for s in range(4):
        mine = np.flatnonzero(owner == s)
        mix[mine] = s * (lines // 4) + np.arange(len(mine))
    hot = rng.integers(0, 8, n) * (1 << 15) + rng.integers(0, 64, n)
    writes = rng.random(n) < 1 / 3
    yield "random", rng.integers(0, lines, n) * 64, writes, None
    yield "streams", mix * 64, writes, None
    yield "hot", hot * 64, writes, None
    yield "timed", mix * 64, writes, np.arange(n, dtype=np.int64) * 3


def _digest(path: Path, columns: int | None = 9) -> str:
    h = hashlib.sha256()
    with open(path) as f:
        for line in f:
            if line.startswith("#"):  # the header comment (memsim.cmdlog.header_comment)
                continue
            h.update(",".join(line.rstrip("\n").split(",")[:columns]).encode())
            h.update(b"\n")
    return h.hexdigest()


def _summary_digest(result, summary_keys) -> str:
    from memsim.results import HOST_METRICS

    s = {k: v for k, v in result.summary().items() if k not in HOST_METRICS}
    if summary_keys:
        s = {k: s[k] for k in summary_keys if k in s}
    # the cores cases' summaries name their trace files: as paths inside this checkout,
    # so that two checkouts' fingerprints compare
    text = json.dumps(s, sort_keys=True, default=str).replace(str(ROOT), "<checkout>")
    return hashlib.sha256(text.encode()).hexdigest()


# Mechanism presets (configs/), each with the overrides that select its loop variant.
MECHANISMS = (
    ("eruca", "ddr4_2400_x8_1ch1r_eruca", ()),
    ("salp1", "ddr4_2400_x8_1ch1r_salp1", ()),
    ("salp2", "ddr4_2400_x8_1ch1r_salp2", ()),
    ("masa", "ddr4_2400_x8_1ch1r_masa", ()),
    ("nda_axpy_2r", "ddr4_2400_x8_1ch2r_nda_axpy", ()),
    ("nda_dot_4r", "ddr4_2400_x8_1ch4r_nda_dot", ()),
    ("secded", "ddr4_2400_x8_1ch1r_secded", ()),
    ("inline_ecc", "ddr4_2400_x8_1ch1r", ("ecc.scheme=inline",)),
)


def _cases():
    """(name, kind, preset, overrides, columns hashed) of every case."""
    for preset in PRESETS:
        for sched in SCHEDULERS:
            for policy in POLICIES:
                over = (f"controller.scheduler={sched}", f"controller.page_policy={policy}")
                yield f"{preset}/{sched}/{policy}", "plain", preset, over, 9
    for sched in SCHEDULERS:
        for policy in POLICIES:
            over = ("dram.ranks=4", f"controller.scheduler={sched}",
                    f"controller.page_policy={policy}")
            yield f"ranks/1ch4r/{sched}/{policy}", "plain", PRESETS[0], over, 9
    yield "ranks/2ch4r/frfcfs/open", "plain", PRESETS[1], ("dram.ranks=4",), 9
    for name, preset, extra in MECHANISMS:
        for policy in ("open", "closed"):
            yield (f"mech/{name}/{policy}", "plain", preset,
                   extra + (f"controller.page_policy={policy}",), None)
    yield "mech/cores/open", "cores", "ddr4_2400_x8_1ch1r_4cores", (), None
    yield ("mech/cores_eruca/open", "cores", "ddr4_2400_x8_1ch1r_eruca",
           ("frontend.mode=cores",), None)
    yield ("mech/cores_nda/open", "cores", "ddr4_2400_x8_1ch2r_nda_axpy",
           ("frontend.mode=cores",), None)
    for preset in PRESETS + ("ddr4_2400_x8_1ch2r_nda_axpy",):
        yield f"mech/simpy/{preset}", "simpy", preset, (), None


def _core_traces() -> list[str]:
    here = ROOT / "traces" / "cores"
    return [str(here / f"{k}.trace") for k in ("stream", "random", "hot", "light")]


def _simpy_run(addr, writes, cycles, preset, log):
    """The timed trace made by a SimPy process (one request per trace cycle, not
    waiting for completions), through the stepped loop (memsim.engine.step)."""
    import simpy

    from memsim.simpy import MemorySystem

    env = simpy.Environment()
    mem = MemorySystem(env, preset, unit="cycles", cmd_log=log, notify=False)

    def source(env):
        for a, w, c in zip(addr.tolist(), writes.tolist(), cycles.tolist(), strict=True):
            if c > env.now:
                yield env.timeout(c - env.now)
            (mem.write if w else mem.read)(a)

    env.process(source(env))
    env.run()
    return mem.close()


def _run(kind, preset, over, trace, log):
    from memsim.multicore import run_cores
    from memsim.sim import run_arrays

    if kind == "cores":
        return run_cores(_core_traces(), preset, list(over), cmd_log=log, notify=False)
    _, addr, w, cyc = trace
    if kind == "plain":
        return run_arrays(addr, w, cyc, preset, list(over), cmd_log=log)
    return _simpy_run(addr, w, cyc, preset, log)


def run_cases(summary_keys=None, only: str = "") -> dict:
    traces = list(_traces())
    out = {}
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "cmd.csv"
        for name, kind, preset, over, columns in _cases():
            if only not in name:
                continue
            # plain runs: every trace; cores: their own traces; SimPy: the timed trace
            todo = traces if kind == "plain" else traces[3:] if kind == "simpy" else [None]
            for trace in todo:
                key = name if trace is None else f"{name}/{trace[0]}"
                r = _run(kind, preset, over, trace, log)
                out[key] = {"log": _digest(log, columns),
                            "summary": _summary_digest(r, summary_keys)}
    return out


def compare(a: dict, b: dict) -> int:
    bad = 0
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        for part in ("log", "summary"):
            if x is None or y is None or x[part] != y[part]:
                print(f"DIFFERENT {part:7} {key}")
                bad += 1
    print(f"{len(a)} cases: {'identical' if bad == 0 else f'{bad} differences'}")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", help="write the fingerprints as JSON")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    ap.add_argument("--summary-keys", nargs="*", default=None,
                    help="fingerprint only these top-level summary keys")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        return compare(a, b)
    prints = run_cases(args.summary_keys, args.only)
    text = json.dumps(prints, indent=1, sort_keys=True)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
