"""Channels on threads of their own, exactly: how much could it save? A model, not an engine.

    python benchmarks/channel_threads.py [-n 20000] [--kinds random,mix]
        [-c PRESET] [-p KEY=VALUE ...]
    python benchmarks/channel_threads.py --ab [-n 1000000] [--rounds 3]
        [--kinds random,random13,mix,stream] [-c PRESET] [-p KEY=VALUE ...]

``--ab`` measures the engine instead: in one process, alternated, ``--rounds`` times
(after one round of warming up), the engine fed in ``memsim run``'s chunks of 64K
requests with MEMSIM_CHANNEL_THREADS=0 (the one loop, the default), =1 (threads from
the first request) and =auto (decided after the first chunk), on the same requests
(``random13``: random with a third writes); it prints the median requests per second
of each, their ratios to the one loop, and what auto chose. It checks that the
three give the same final cycle.

The model that ``memsim/engine/channels.py`` was built on (which runs each channel on
a thread of its own under the protocol below; docs/speed.md, "Channels on threads",
compares the two). Below the front end channels share nothing,
but the front end admits requests in trace order and stops at the first whose queue is
full (or, as fast as possible, when no outstanding slot is free), so each channel's
requests arrive when the other channels' decisions let them. Simulated apart, each
channel's thread may decide cycle ``t`` only once it knows every request that enters
its queue by ``t``; a conservative protocol gets that exactly, with no roll-back:

- every thread runs the same front end over the whole trace, admitting its own
  channel's requests for real and the others' in count only;
- a thread publishes, after each decision, the cycle up to which it has decided, and
  appends each queue slot its channel frees and each data end it schedules;
- when the front end's head waits for another channel's full queue, a thread waits
  until that channel has decided every cycle before the one it is at (a freed slot
  then admits at the next cycle); when it waits for an outstanding slot, until every
  channel has decided the cycles before ``t - L``, where ``L`` (the least time from a
  column command to its data's end: CWL + burst, 16 cycles at DDR4-2400) is how far
  ahead a data end is known; and the same whenever a request takes a slot (as fast as
  possible), since its latency counts from the cycle that slot freed, the earliest data
  end not yet taken, which only a complete list of the data ends up to ``t`` tells.

The model records, without compiling (so the front end can be read at every decision),
each decision of a serial run: its cycle, channel, whether it issued, what held the
front end's head then, and the requests admitted just before. It then schedules those
decisions on one thread per channel under the rules above: each decision costs the
compiled loop's mean time per decision (measured here on the same requests), a wait
for another thread costs one hand-off between cores (measured here: two compiled
threads passing a counter back and forth), and each decision pays a look at the other
threads' progress (``--check-ns``, assumed: 20 ns, a read of a line another core
wrote). It prints the serial time, the threads' time and their ratio (also with
hand-offs of 80 and 250 ns, the range measured on the 2-vCPU machine): what the second
core could give a 2-channel run, before the protocol's own code. Decisions are given
one mean cost, so the threads' imbalance between two waits is that of their counts.
"""

from __future__ import annotations

import argparse
import bisect
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# a libc call the compiler cannot see into: a spinning thread reloads the counter after it
_LIBC = ctypes.CDLL(None)
_OPAQUE = _LIBC.labs
_OPAQUE.restype = ctypes.c_long
_OPAQUE.argtypes = [ctypes.c_long]


def handoff_ns(rounds: int = 200_000, repeats: int = 5) -> float:
    """Median time, in ns, for one compiled thread to see a counter another thread set
    (half a round trip of two threads passing it back and forth)."""
    from numba import njit

    @njit(nogil=True)
    def player(flag, me, n):
        for i in range(n):
            want = 2 * i + me
            while flag[0] != want:
                _OPAQUE(1)
            flag[0] = want + 1

    player(np.zeros(1, np.int64), 0, 0)  # compile
    times = []
    for _ in range(repeats):
        flag = np.zeros(8, np.int64)
        threads = [threading.Thread(target=player, args=(flag, me, rounds)) for me in (0, 1)]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        times.append((time.perf_counter() - t0) / rounds / 2 * 1e9)
    return float(np.median(times))


def _requests(args, kind, write_ratio=0.0):
    from memsim import config, mapping, trace
    from memsim.dram import spec as specm
    cfg = config.load(args.config, args.param)
    spec = specm.build(cfg)
    _, w, a = trace.generate(kind, args.requests, seed=1, footprint_bytes=4 << 30,
                             write_ratio=write_ratio)
    d = mapping.AddressMapping.from_config(cfg, spec).decode(a)
    return cfg, spec, w.astype(np.int64), d


def record(args, kind, out: Path) -> None:
    """The serial run's decisions, uncompiled (NUMBA_DISABLE_JIT set by the caller)."""
    import memsim.engine as eng
    from memsim.engine import layout, schedule
    cfg, spec, w, d = _requests(args, kind)
    n = args.requests
    rows = []  # cycle, channel, issued, blocker, first admitted channel (-1: none)
    serial = schedule.schedule_channel
    seen = {"idx": 0}

    def observed(P, T, S, X, ch, t, features):
        F = S.F
        idx = F[layout.F_IDX]
        first = int(S.node_ch[d.bank[seen["idx"]]]) if idx > seen["idx"] else -1
        seen["idx"] = idx
        if idx >= n:
            held = -3  # the trace has entered
        else:
            hc = int(S.node_ch[d.bank[idx]])
            q = 1 if w[idx] else 0
            cap = P[layout.P_WQ_CAP] if q else P[layout.P_RQ_CAP]
            if S.q_len[q, hc] >= cap:
                held = hc  # its queue is full
            elif F[layout.F_NREQ] >= F[layout.F_NFREED]:
                held = -1  # no outstanding slot
            else:
                held = -2  # a slot this cycle's decisions freed: it enters next cycle
        nxt = serial(P, T, S, X, ch, t, features)
        rows.append((t, ch, nxt == t + 1, held, first))
        return nxt

    schedule.schedule_channel = observed
    e = eng.Engine(cfg, spec, timed=False)
    e.feed(np.full(n, -1, np.int64), w, d.bank, d.row, d.column, final=True)
    np.save(out, np.array(rows, np.int64))


def decision_ns(args, kind, decisions: int) -> float:
    """The compiled loop's mean time per decision on the same requests (best of 3)."""
    import memsim.engine as eng
    cfg, spec, w, d = _requests(args, kind)
    n = args.requests
    best = float("inf")
    for _ in range(4):  # (the first call loads the compiled loop)
        e = eng.Engine(cfg, spec, timed=False)
        t0 = time.perf_counter()
        e.feed(np.full(n, -1, np.int64), w, d.bank, d.row, d.column, final=True)
        best = min(best, time.perf_counter() - t0)
    return best / decisions * 1e9


def schedule(rows: np.ndarray, nch: int, cost: float, handoff: float, check: float,
             lookahead: int, slots: bool = True) -> tuple[float, float, float]:
    """List-schedules the serial run's decisions on one thread per channel (module
    docstring). Returns (serial ns, threads' ns, waits a decision)."""
    cyc = [[] for _ in range(nch)]  # each thread's decided cycles, in order
    fin = [[] for _ in range(nch)]  # and when each decision finished
    busy = [0.0] * nch
    front = 0.0  # when the front end is known through the current cycle
    waits = 0

    def decided_before(ch, cycle):
        k = bisect.bisect_left(cyc[ch], cycle)
        return fin[ch][k - 1] if k else 0.0

    for t, ch, _issued, held, first in rows.tolist():
        others = [x for x in range(nch) if x != ch]
        need = 0.0
        if held >= 0 and held != ch:
            need = decided_before(held, t)
        elif held == -2:
            need = max(decided_before(x, t) for x in others)
        elif held == -1:
            need = max(decided_before(x, t - lookahead) for x in others)
        if first >= 0:
            if first != ch:  # admitted when that channel's queue freed a slot
                need = max(need, decided_before(first, t))
            if slots:  # the slot's exact cycle: every data end up to t known
                need = max([need] + [decided_before(x, t - lookahead) for x in others])
        front = max(front, need)
        start = busy[ch] + check
        if front + handoff > start:
            start = front + handoff
            waits += 1
        busy[ch] = start + cost
        cyc[ch].append(t)
        fin[ch].append(busy[ch])
    return len(rows) * cost, max(busy), waits / len(rows)


def measure(args) -> None:
    """``--ab`` (module docstring)."""
    import statistics

    import memsim.engine as eng
    from memsim.engine import channels
    chunk = 1 << 16
    for kind in args.kinds.split(","):
        write_ratio = 1 / 3 if kind == "random13" else 0.0
        cfg, spec, w, d = _requests(args, "random" if kind == "random13" else kind,
                                    write_ratio)
        n = args.requests
        rates = {"0": [], "1": [], "auto": []}
        ends, chosen = set(), None
        for r in range(args.rounds + 1):
            for setting in ("0", "1", "auto"):
                os.environ[channels.ENV] = setting
                e = eng.Engine(cfg, spec, timed=False)
                e.warm_up()
                t0 = time.perf_counter()
                for s in range(0, n, chunk):
                    part = slice(s, s + chunk)
                    e.feed(np.full(len(w[part]), -1, np.int64), w[part], d.bank[part],
                           d.row[part], d.column[part])
                e.finish()
                if r:
                    rates[setting].append(n / (time.perf_counter() - t0))
                ends.add(e.final_cycle)
                if setting == "auto":
                    chosen = e.channel_threads
        os.environ.pop(channels.ENV, None)
        if len(ends) != 1:
            raise SystemExit(f"{kind}: the final cycles differ: {sorted(ends)}")
        one, on, auto = (statistics.median(rates[k]) for k in ("0", "1", "auto"))
        print(f"{kind:9s} one loop {one:>11,.0f}/s  threads {on:>11,.0f}/s ({on / one:.3f}x)"
              f"  auto [{chosen}] {auto:>11,.0f}/s ({auto / one:.3f}x)", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--requests", type=int, default=20_000)
    ap.add_argument("--kinds", default="random,mix")
    ap.add_argument("-c", "--config", default=str(ROOT / "configs/ddr4_2400_x8_1ch1r.yaml"))
    ap.add_argument("-p", "--param", action="append",
                    default=["dram.channels=2", "dram.ranks=2"])
    ap.add_argument("--check-ns", type=float, default=20.0,
                    help="assumed cost of a decision's look at the other threads' progress")
    ap.add_argument("--ab", action="store_true",
                    help="measure the engine: one loop, threads, auto (docstring)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--record", help=argparse.SUPPRESS)  # KIND,OUT: the uncompiled child
    args = ap.parse_args(argv)
    if args.record:
        kind, out = args.record.split(",", 1)
        record(args, kind, Path(out))
        return 0
    if args.ab:
        if args.requests == 20_000:
            args.requests = 1_000_000
        if args.kinds == "random,mix":
            args.kinds = "random,random13,mix,stream"
        measure(args)
        return 0

    _, spec, _, _ = _requests(argparse.Namespace(**{**vars(args), "requests": 1}), "random")
    nch = spec.channels
    if nch < 2:
        ap.error("the model needs at least 2 channels (-p dram.channels=2)")
    col = spec.data_delay > 0
    lookahead = int((spec.data_delay[col] + spec.burst_cycles[col]).min())
    hand = handoff_ns()
    print(f"hand-off between two compiled threads: {hand:.0f} ns (median of 5)")
    print(f"{nch} channels, front-end lookahead on outstanding slots {lookahead} cycles")
    print("kind    decisions/req  ns/decision  serial ms  threads ms  ratio  waits/decision"
          "  ratio at 80 / 250 ns")
    results = {}
    for kind in args.kinds.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "rows.npy"
            env = dict(os.environ, NUMBA_DISABLE_JIT="1")
            cmd = [sys.executable, __file__, "-n", str(args.requests), "-c", args.config,
                   "--record", f"{kind},{out}"]
            for p in args.param[2:]:  # (the child's own defaults hold the first two)
                cmd += ["-p", p]
            subprocess.run(cmd, env=env, check=True, cwd=ROOT)
            rows = np.load(out)
        cost = decision_ns(args, kind, len(rows))
        serial, threads, waits = schedule(rows, nch, cost, hand, args.check_ns, lookahead)
        other = [serial / schedule(rows, nch, cost, h, args.check_ns, lookahead)[1]
                 for h in (80.0, 250.0)]
        results[kind] = dict(decisions_per_request=len(rows) / args.requests,
                             ns_per_decision=cost, serial_ms=serial / 1e6,
                             threads_ms=threads / 1e6, ratio=serial / threads,
                             waits_per_decision=waits, ratio_80ns=other[0],
                             ratio_250ns=other[1])
        print(f"{kind:7s} {len(rows) / args.requests:13.2f} {cost:12.0f} {serial / 1e6:10.2f}"
              f" {threads / 1e6:11.2f} {serial / threads:6.2f}x {waits:15.2f}"
              f"  {other[0]:.2f}x / {other[1]:.2f}x")
    print(json.dumps({"handoff_ns": hand, "lookahead_cycles": lookahead, **results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
