"""Command-log A/B set: fingerprints of 72 plain-DDR4 runs, to prove a change left the
engine's decisions alone.

    PYTHONPATH=CHECKOUT python benchmarks/ab_logs.py -o before.json   # in the old tree
    PYTHONPATH=CHECKOUT python benchmarks/ab_logs.py -o after.json    # in the new tree
    python benchmarks/ab_logs.py --compare before.json after.json

Cases: 2 presets x 3 schedulers x 3 page policies x 4 traces (random, four streams,
hot rows with 1/3 writes as fast as possible; the mixed trace timestamped at one request
every 3 cycles), 3,000 requests each. Each case records the SHA-256 of its command log
(the CSV the engine writes, its first nine columns, so that columns added for other
mechanisms do not count; the comment lines a log starts with, its version and config,
are skipped, so that logs of trees before and after that header compare) and of the
simulated part of its summary. ``--summary-keys``
restricts the summary fingerprint to the given top-level keys (for changes that add
metrics on purpose).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

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


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path) as f:
        for line in f:
            if line.startswith("#"):  # the header comment (memsim.cmdlog.header_comment)
                continue
            h.update(",".join(line.rstrip("\n").split(",")[:9]).encode())
            h.update(b"\n")
    return h.hexdigest()


def run_cases(summary_keys=None) -> dict:
    from memsim.results import HOST_METRICS
    from memsim.sim import run_arrays

    out = {}
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "cmd.csv"
        for preset in PRESETS:
            for sched in SCHEDULERS:
                for policy in POLICIES:
                    for name, addr, w, cyc in _traces():
                        over = [f"controller.scheduler={sched}",
                                f"controller.page_policy={policy}"]
                        r = run_arrays(addr, w, cyc, preset, over, cmd_log=log)
                        s = {k: v for k, v in r.summary().items() if k not in HOST_METRICS}
                        if summary_keys:
                            s = {k: s[k] for k in summary_keys if k in s}
                        key = f"{preset}/{sched}/{policy}/{name}"
                        out[key] = {"log": _digest(log), "summary": hashlib.sha256(
                            json.dumps(s, sort_keys=True, default=str).encode()).hexdigest()}
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", help="write the fingerprints as JSON")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    ap.add_argument("--summary-keys", nargs="*", default=None,
                    help="fingerprint only these top-level summary keys")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        return compare(a, b)
    prints = run_cases(args.summary_keys)
    text = json.dumps(prints, indent=1, sort_keys=True)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
