"""memsim against the C++ simulators, end to end, on the same traces and organisations.

    python benchmarks/anchors.py --ramulator2 DIR --dramsim3 DIR [-n 2000000]
        [--kinds random,mix,stream] [--configs 1ch1r,1ch2r,1ch4r,2ch2r] [--rounds 1]
        [-o results/anchors.csv]

Times each simulator as a process, from its start to its exit (what a user waits
for: start-up, reading the trace, simulating, writing results), on one trace per
kind (``memsim trace gen KIND -n N``, as fast as possible: every request is offered
at once and enters when the controller has room), DDR4-2400R x8 8Gb, FR-FCFS, open
page, all-bank refresh, at 1, 2 and 4 ranks on one channel and 2 channels of 2
ranks. Prints requests per wall-second and per CPU-second (the process's user +
system time, from ``getrusage``) and memsim's ratio to the fastest anchor, and the
simulated cycles of each, which agree to within a few per cent (they simulate the same
work, each with its own scheduler: on 2M random reads Ramulator 2 took 0.0 to 2.9 % fewer
cycles than memsim and DRAMsim3 from 2.5 % fewer to 3.5 % more, the largest gaps at 2
and 4 ranks; DRAMsim3 takes up to twice as many on the mix. DRAMsim3 runs a given
number of cycles, found by a first, untimed run, so it is timed to within 0.5 % of
memsim's cycles past its last request).

The anchors are not part of memsim; build them yourself (the versions last measured,
Release builds with g++ 12 and CMake 3.25, about 4 minutes on 2 cores; Ramulator's CMake
fetches yaml-cpp, fmt and nanobind itself, and its Python bindings are built for the
interpreter named):

    git clone https://github.com/CMU-SAFARI/ramulator2
    git -C ramulator2 checkout c5b1c3a478b68853a61a0b8f99510d0dde7e6fd0
    cmake -S ramulator2 -B ramulator2/build -DCMAKE_BUILD_TYPE=Release \
        -DPython_EXECUTABLE="$(python -c 'import sys; print(sys.executable)')"
    cmake --build ramulator2/build -j2
    git clone https://github.com/umd-memsys/DRAMsim3
    git -C DRAMsim3 checkout 29817593b3389f1337235d63cac515024ab8fd6e
    cmake -S DRAMsim3 -B DRAMsim3/build -DCMAKE_BUILD_TYPE=Release
    cmake --build DRAMsim3/build -j2

then ``--ramulator2 ramulator2 --dramsim3 DRAMsim3``:

- Ramulator 2 (https://github.com/CMU-SAFARI/ramulator2) with its Python bindings:
  DIR holds ``python/ramulator`` and ``libramulator.so``; ``--python`` names an
  interpreter that can import them (default: this one).
- DRAMsim3 (https://github.com/umd-memsys/DRAMsim3): DIR holds
  ``build/dramsim3main`` and ``configs/DDR4_8Gb_x8_2400.ini``, which is used with
  memsim's preset's CL, tRCD and tRP (16, DDR4-2400R), its address mapping
  (row, bank, bank group, rank, column, channel) and the organisation's ranks and
  channels.

DRAMSys is not run here (its trace player needs a JSON simulation config per case).
Either anchor may be left out. Start-up matters on short traces: ``-n 200000``.
memsim runs with this process's environment: ``MEMSIM_CHANNEL_THREADS=auto python
benchmarks/anchors.py ...`` times it with its channels on threads where they pay
(docs/speed.md, "Channels on threads"); unset, in one loop.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent

CONFIGS = {"1ch1r": (1, 1), "1ch2r": (1, 2), "1ch4r": (1, 4), "2ch2r": (2, 2)}

# Ramulator 2's standalone run of a LoadStoreTrace, matching memsim's default preset.
RAMULATOR_RUN = '''
import sys
import ramulator
trace, ranks, channels = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
frontend = ramulator.frontend.LoadStoreTrace(clock_ratio=1, path=trace)
ctrls = [ramulator.controller.GenericDDR(
    dram=ramulator.dram.DDR4(org_preset="DDR4_8Gb_x8", timing_preset="DDR4_2400R", rank=ranks),
    scheduler=ramulator.scheduler.FRFCFS(),
    refresh_manager=ramulator.refresh_manager.AllBank(),
    row_policy=ramulator.row_policy.Open(),
    addr_mapper=ramulator.addr_mapper.RoBaRaCoCh()) for _ in range(channels)]
mem = ramulator.memory_system.GenericDRAM(clock_ratio=1, controllers=ctrls,
    channel_mapper=ramulator.channel_mapper.CacheLineInterleave())
sim = ramulator.Simulation(frontend, mem)
sim.run()
c = sim.stats["memory_system"]["controller"]
cs = c if isinstance(c, list) else [c]
print("cycles", max(x["cycles"] for x in cs))
'''


def timed(cmd: list[str], env: dict | None = None,
          cwd: Path | None = None) -> tuple[float, float, str]:
    """Run ``cmd`` to its end: wall seconds, CPU seconds (user + system of the
    process and its children) and its standard output. A failure stops the
    benchmark with the tool's own message."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def make_traces(kind: str, n: int, work: Path) -> dict[str, Path]:
    """The same requests in the three simulators' formats."""
    native = work / f"{kind}.trace"
    ram = work / f"{kind}.r2"
    for path, fmt in ((native, "native"), (ram, "ramulator2")):
        subprocess.run([sys.executable, "-m", "memsim", "trace", "gen", kind, "-n", str(n),
                        "-o", str(path), "--format", fmt, "-q"], check=True, cwd=ROOT)
    ds3 = work / f"{kind}.ds3"  # DRAMsim3: address, kind, cycle (0: all offered at once)
    with open(ram) as src, open(ds3, "w") as dst:
        for line in src:
            op, addr = line.split()
            dst.write(f"{addr} {'READ' if op == 'LD' else 'WRITE'} 0\n")
    return {"memsim": native, "ramulator2": ram, "dramsim3": ds3}


def dramsim3_ini(dramsim3: Path, channels: int, ranks: int, epoch: int, out: Path) -> Path:
    """DRAMsim3's DDR4-2400 x8 8Gb config with memsim's preset's timing and mapping,
    statistics every ``epoch`` cycles."""
    text = (dramsim3 / "configs" / "DDR4_8Gb_x8_2400.ini").read_text()
    settings = {"CL": 16, "tRCD": 16, "tRP": 16, "channels": channels,
                "channel_size": 8192 * ranks,  # MB per channel: 8 GB per rank of x8 8Gb
                "address_mapping": "robabgracoch", "epoch_period": epoch}
    for key, value in settings.items():
        text, n = re.subn(rf"^{key}\s*=.*$", f"{key} = {value}", text, flags=re.M)
        if n != 1:
            sys.exit(f"{dramsim3}/configs/DDR4_8Gb_x8_2400.ini: expected one '{key} =' "
                     f"line, found {n}")
    out.write_text(text)
    return out


def run_memsim(trace: Path, channels: int, ranks: int, work: Path) -> tuple[float, float, int]:
    result = work / "memsim.json"
    wall, cpu, _ = timed([sys.executable, "-m", "memsim", "run", str(trace), "-q",
                          "-p", f"dram.channels={channels}", "-p", f"dram.ranks={ranks}",
                          "--json", str(result)], cwd=ROOT)
    return wall, cpu, int(json.loads(result.read_text())["cycles"])


def run_ramulator(args, trace: Path, channels: int, ranks: int, work: Path):
    script = work / "ramulator_run.py"
    script.write_text(RAMULATOR_RUN)
    env = dict(os.environ, PYTHONPATH=str(args.ramulator2 / "python"),
               LD_LIBRARY_PATH=str(args.ramulator2))
    wall, cpu, out = timed([args.python, str(script), str(trace), str(ranks), str(channels)],
                           env=env, cwd=work)
    return wall, cpu, int(re.search(r"cycles (\d+)", out).group(1))


def run_dramsim3(args, trace: Path, channels: int, ranks: int, work: Path, n: int,
                 cycles: int):
    """DRAMsim3 runs for a given number of cycles, not to the end of its trace, so an
    untimed first run with statistics every 0.5 % of memsim's cycles finds the epoch
    in which it served the last request, and the timed run stops there."""
    out = work / "ds3out"
    out.mkdir(exist_ok=True)
    main = str(args.dramsim3 / "build" / "dramsim3main")
    epoch = max(1000, cycles // 200)
    ini = dramsim3_ini(args.dramsim3, channels, ranks, epoch, work / "ds3_epochs.ini")
    subprocess.run([main, str(ini), "-c", str(3 * cycles + epoch), "-t", str(trace),
                    "-o", str(out)], check=True, capture_output=True, cwd=work)
    epochs = json.loads((out / "dramsim3epoch.json").read_text())  # per channel, per epoch
    served, run_for = 0, None
    for i in range(0, len(epochs), channels):
        served += sum(e["num_reads_done"] + e["num_writes_done"] for e in epochs[i:i + channels])
        if served >= n:
            run_for = (i // channels + 1) * epoch
            break
    if run_for is None:
        sys.exit(f"DRAMsim3 served {served:,} of {n:,} requests in {3 * cycles:,} cycles")
    ini = dramsim3_ini(args.dramsim3, channels, ranks, 2**31 - 1, work / "ds3.ini")
    wall, cpu, _ = timed([main, str(ini), "-c", str(run_for), "-t", str(trace), "-o", str(out)],
                         cwd=work)
    stats = json.loads((out / "dramsim3.json").read_text())
    done = sum(ch["num_reads_done"] + ch["num_writes_done"] for ch in stats.values())
    if done < n:  # (its trace reader offers the last request twice: n + 1 is complete)
        sys.exit(f"DRAMsim3 served {done:,} of {n:,} requests in {run_for:,} cycles")
    return wall, cpu, run_for


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ramulator2", type=Path, help="Ramulator 2 source tree, built")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter that imports Ramulator 2's bindings")
    ap.add_argument("--dramsim3", type=Path, help="DRAMsim3 source tree, built")
    ap.add_argument("-n", type=int, default=2_000_000, help="requests per trace")
    ap.add_argument("--kinds", default="random,mix,stream")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--rounds", type=int, default=1, help="runs of each (the best is kept)")
    ap.add_argument("-o", "--output", type=Path, help="CSV of every run")
    args = ap.parse_args()
    for cfg in args.configs.split(","):
        if cfg not in CONFIGS:
            ap.error(f"--configs: unknown {cfg!r}; expected some of {', '.join(CONFIGS)}")

    rows = []
    with tempfile.TemporaryDirectory(prefix="memsim-anchors-") as tmp:
        work = Path(tmp)
        for kind in args.kinds.split(","):
            traces = make_traces(kind, args.n, work)
            for cfg in args.configs.split(","):
                channels, ranks = CONFIGS[cfg]
                for rnd in range(args.rounds):
                    wall, cpu, cycles = run_memsim(traces["memsim"], channels, ranks, work)
                    runs = {"memsim": (wall, cpu, cycles)}
                    if args.ramulator2:
                        runs["ramulator2"] = run_ramulator(args, traces["ramulator2"],
                                                           channels, ranks, work)
                    if args.dramsim3:
                        runs["dramsim3"] = run_dramsim3(args, traces["dramsim3"], channels,
                                                        ranks, work, args.n, cycles)
                    for tool, (wall, cpu, cyc) in runs.items():
                        rows.append(dict(kind=kind, config=cfg, round=rnd, simulator=tool,
                                         wall_s=wall, cpu_s=cpu, cycles=cyc,
                                         requests_per_s=args.n / wall,
                                         requests_per_cpu_s=args.n / cpu))
                        print(f"{kind:7s} {cfg}  {tool:10s} {wall:7.2f} s wall {cpu:7.2f} s CPU"
                              f"  {args.n / wall / 1e3:8.0f}k req/s  {cyc:,} cycles", flush=True)

    runs = pd.DataFrame(rows)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        runs.to_csv(args.output, index=False)
    best = runs.groupby(["kind", "config", "simulator"])[["wall_s", "cpu_s"]].min()
    print(f"\nrequests per second, best of {args.rounds} (wall / CPU), and memsim over the "
          "fastest anchor:")
    for (kind, cfg), group in best.groupby(level=[0, 1]):
        group = group.droplevel([0, 1])
        line = f"{kind:7s} {cfg}"
        for tool in group.index:
            line += (f"  {tool} {args.n / group.wall_s[tool] / 1e3:.0f}k"
                     f" / {args.n / group.cpu_s[tool] / 1e3:.0f}k")
        anchors = group.drop(index="memsim")
        if len(anchors):
            line += (f"  ratio {anchors.wall_s.min() / group.wall_s['memsim']:.2f}x wall"
                     f" / {anchors.cpu_s.min() / group.cpu_s['memsim']:.2f}x CPU")
        print(line)


if __name__ == "__main__":
    main()
