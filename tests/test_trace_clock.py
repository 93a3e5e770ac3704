"""Timed traces keep their meaning across DRAM clocks: ``frontend.trace_clock`` and the
trace's ``# clock:`` header say what a timestamp counts, and a run converts timestamps
into its own DRAM clock's cycles exactly (memsim/trace/clock.py)."""

from __future__ import annotations

import gzip
import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from helpers import HOST_KEYS, trace

from memsim import config, sim
from memsim.config import ConfigError
from memsim.trace import TraceError, open_trace, write_trace
from memsim.trace import clock as clock_mod

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "traces" / "example_mix.trace"
DDR4 = "ddr4_2400_x8_1ch1r"  # 1200 MHz command clock
DDR5 = "ddr5_4800b_x8_1dimm"  # 2400 MHz
NO_REFRESH = ("dram.refresh=false",)


def simulated(result) -> str:
    """What the engine computed: the summary without host timing, trace identity and the
    config (the runs compared set the same requests' times differently)."""
    s = {k: v for k, v in result.summary().items()
         if k not in (*HOST_KEYS, "trace", "config")}
    return json.dumps(s, sort_keys=True, default=str)


def with_header(path: Path, header: str, cycle, is_write, addr) -> Path:
    """A native trace of the requests whose first line is ``header``."""
    write_trace(path, cycle, is_write, addr)
    path.write_text(header + "\n" + path.read_text())
    return path


# ------------------------------------------------------------------ the clock itself

@pytest.mark.parametrize("text, shown, per_tick_on_ddr5", [
    ("dram", "dram", 1),
    ("ns", "ns", Fraction(12, 5)),  # 2400 MHz: 2.4 cycles per ns
    ("1200MHz", "1200 MHz", 2),
    ("1200 MHz", "1200 MHz", 2),
    ("  1600 mhz ", "1600 MHz", Fraction(3, 2)),
    ("3.2 GHz", "3200 MHz", Fraction(3, 4)),
    ("1866.67MHz", "1866.67 MHz", Fraction(2400 * 100, 186667)),
])
def test_clocks_and_their_dram_cycles_per_tick(text, shown, per_tick_on_ddr5):
    clock = clock_mod.parse(text)
    assert str(clock) == shown
    assert clock.dram_cycles_per_tick(Fraction(2400)) == per_tick_on_ddr5


@pytest.mark.parametrize("text", ["", "1200", "MHz", "1200 Hz", "-5MHz", "0 MHz", "1e3MHz",
                                  "dram cycles"])
def test_what_is_not_a_clock(text):
    with pytest.raises(ValueError, match=r"trace clock|above 0 MHz"):
        clock_mod.parse(text)


def test_conversion_is_exact_and_rounds_up():
    t = np.array([0, 1, 2, 3, 4, 5, 10, 11, 12], np.int64)
    lines = np.arange(1, len(t) + 1)
    # 1200 MHz timestamps on DDR4-3200's 1600 MHz clock: ceil(t * 4 / 3)
    assert clock_mod.to_dram_cycles(t, Fraction(4, 3), "t", lines, 1 << 62).tolist() == \
        [0, 2, 3, 4, 6, 7, 14, 15, 16]
    # ns on DDR4-2400 (1200 MHz): ceil(t * 6 / 5)
    assert clock_mod.to_dram_cycles(t, Fraction(6, 5), "t", lines, 1 << 62).tolist() == \
        [0, 2, 3, 4, 5, 6, 12, 14, 15]
    # 1200 MHz on 2400 MHz: exactly twice; equal clocks: the timestamps themselves
    assert clock_mod.to_dram_cycles(t, Fraction(2), "t", lines, 1 << 62).tolist() == \
        (2 * t).tolist()
    assert clock_mod.to_dram_cycles(t, Fraction(1), "t", lines, 1 << 62) is t
    # no int64 overflow on the way for large timestamps: (t // q) * p + ...
    big = np.array([(1 << 61) + 5], np.int64)
    assert clock_mod.to_dram_cycles(big, Fraction(4, 3), "t", [1], 1 << 62).tolist() == \
        [-(-((1 << 61) + 5) * 4 // 3)]


def test_a_converted_timestamp_past_the_limit_names_its_line():
    t = np.array([5, 1 << 61], np.int64)
    with pytest.raises(TraceError, match=r"^t:8: timestamp 2305843009213693952 is beyond "
                                         r"the supported 2\*\*62 DRAM cycles once converted "
                                         r"\(x 2/1\)$"):
        clock_mod.to_dram_cycles(t, Fraction(2), "t", np.array([7, 8]), 1 << 62)


# ------------------------------------------------------------------ the header

def test_header_is_read_before_the_first_record(tmp_path):
    p = tmp_path / "t.trace"
    p.write_text("# a trace\n\n#Clock :  1200 MHz\n0 R 0x40\n# clock: ns\n")
    assert open_trace(p).clock == (clock_mod.parse("1200MHz"), 3)
    # after the first record it is only a comment
    p.write_text("0 R 0x40\n# clock: ns\n")
    assert open_trace(p).clock is None
    # gzip is looked through
    g = tmp_path / "t.trace.gz"
    g.write_bytes(gzip.compress(b"# clock: ns\n0 R 0x40\n"))
    assert open_trace(g).clock == (clock_mod.parse("ns"), 1)


@pytest.mark.parametrize("text, message", [
    ("# clock: 12 parsecs\n0 R 0x40\n",
     r"t\.trace:1: '# clock: 12 parsecs': '12 parsecs' is not a trace clock \(expected dram, "
     r"ns, or a frequency such as 1200 MHz or 3\.2 GHz\)$"),
    ("# clock: ns\n# clock: 1200 MHz\n0 R 0x40\n",
     r"t\.trace:2: '# clock: 1200 MHz': a second clock header \(line 1 declares the clock "
     r"already\)$"),
])
def test_bad_headers_name_file_and_line(tmp_path, text, message):
    p = tmp_path / "t.trace"
    p.write_text(text)
    with pytest.raises(TraceError, match=message):
        open_trace(p)


# ------------------------------------------------------------------ runs

def test_a_1200mhz_trace_on_ddr5_is_the_dram_clock_trace_at_twice_the_cycles(tmp_path):
    addr, w, cycle = trace("mix", 600, seed=3, write_ratio=0.3, timed_every=7.5)
    t = with_header(tmp_path / "t.trace", "# clock: 1200 MHz", cycle, w, addr)
    declared = sim.run(t, DDR5, NO_REFRESH, progress=False)
    by_hand = sim.run_arrays(addr, w, 2 * cycle, DDR5, NO_REFRESH, progress=False)
    assert simulated(declared) == simulated(by_hand)
    # on DDR4-2400 the header is its own clock: the timestamps unchanged
    plain = sim.run_arrays(addr, w, cycle, DDR4, NO_REFRESH, progress=False)
    assert simulated(sim.run(t, DDR4, NO_REFRESH, progress=False)) == simulated(plain)


def test_ns_timestamps_enter_at_the_first_dram_cycle_at_or_after_them(tmp_path):
    addr, w, cycle = trace("random", 400, seed=5, write_ratio=0.2, timed_every=3.3)
    over = NO_REFRESH + ("frontend.trace_clock=ns",)
    got = sim.run_arrays(addr, w, cycle, DDR4, over, progress=False)
    # DDR4-2400: tCK = 5/6 ns, so t ns is DRAM cycle ceil(t * 6 / 5)
    by_hand = sim.run_arrays(addr, w, -(-cycle * 6 // 5), DDR4, NO_REFRESH, progress=False)
    assert simulated(got) == simulated(by_hand)
    assert got.trace["clock"] == {"trace_clock": "ns", "source": "frontend.trace_clock",
                                  "applied": True, "dram_clock_mhz": 1200.0,
                                  "dram_cycles_per_tick": "6/5"}


def test_the_rate_multiplier_divides_the_converted_times(tmp_path):
    """frontend.cpu_cycles_per_dram_cycle after the conversion: 2 on DDR5 undoes the
    1200 MHz header's x2 (floor(2t / 2) = t)."""
    addr, w, cycle = trace("stream", 300, seed=1, timed_every=4)
    t = with_header(tmp_path / "t.trace", "# clock: 1200 MHz", cycle, w, addr)
    fast = sim.run(t, DDR5, NO_REFRESH + ("frontend.cpu_cycles_per_dram_cycle=2",),
                   progress=False)
    assert simulated(fast) == \
        simulated(sim.run_arrays(addr, w, cycle, DDR5, NO_REFRESH, progress=False))


def test_key_and_header_must_agree(tmp_path):
    addr, w, cycle = trace("stream", 50, timed_every=4)
    t = with_header(tmp_path / "t.trace", "# clock: 1200 MHz", cycle, w, addr)
    with pytest.raises(ConfigError, match=re.escape(
            f"frontend.trace_clock: 'ns', but {t}:1 declares the trace's clock as 1200 MHz "
            f"('# clock:' header); leave the key unset or make them agree")):
        sim.run(t, DDR5, ["frontend.trace_clock=ns"], progress=False)
    agreed = sim.run(t, DDR5, NO_REFRESH + ("frontend.trace_clock=1200MHz",), progress=False)
    assert agreed.trace["clock"]["source"] == "frontend.trace_clock"
    assert simulated(agreed) != simulated(
        sim.run_arrays(addr, w, cycle, DDR5, NO_REFRESH, progress=False))


def test_a_converting_run_says_so_once_on_stderr(tmp_path, capfd):
    addr, w, cycle = trace("stream", 50, timed_every=4)
    t = with_header(tmp_path / "t.trace", "# clock: 1200 MHz", cycle, w, addr)
    sim.run(t, DDR5, NO_REFRESH, progress=None)
    notes = [line for line in capfd.readouterr().err.splitlines() if "note:" in line]
    assert notes == [f"memsim: note: {t}: timestamps on a 1200 MHz clock (its '# clock:' "
                     f"header) converted to DDR5_4800B's 2400 MHz DRAM clock: DRAM cycle = "
                     f"ceil(t x 2)"]
    # the same clock on DDR4-2400, an untimed run and a quiet one: nothing to say
    sim.run(t, DDR4, NO_REFRESH, progress=None)
    sim.run(t, DDR5, NO_REFRESH + ("frontend.mode=afap",), progress=None)
    sim.run(t, DDR5, NO_REFRESH, progress=False)
    assert "note:" not in capfd.readouterr().err


def test_the_result_records_the_trace_clock(tmp_path):
    addr, w, cycle = trace("stream", 50, timed_every=4)
    t = with_header(tmp_path / "t.trace", "# clock: 1200 MHz", cycle, w, addr)
    r = sim.run(t, "ddr4_3200_x8_2ch2r", NO_REFRESH, progress=False)
    r.write_json(tmp_path / "r.json")
    recorded = json.loads((tmp_path / "r.json").read_text())["trace"]["clock"]
    assert recorded == {"trace_clock": "1200 MHz", "source": "header",
                        "applied": True, "dram_clock_mhz": 1600.0,
                        "dram_cycles_per_tick": "4/3"}
    # untimed (afap): recorded, not applied; no header: the DRAM clock by default
    afap = sim.run(t, DDR4, NO_REFRESH + ("frontend.mode=afap",), progress=False)
    assert afap.trace["clock"]["applied"] is False
    write_trace(tmp_path / "plain.trace", cycle, w, addr)
    plain = sim.run(tmp_path / "plain.trace", DDR5, NO_REFRESH, progress=False)
    assert plain.trace["clock"] == {"trace_clock": "dram", "source": "default",
                                    "applied": True, "dram_clock_mhz": 2400.0,
                                    "dram_cycles_per_tick": "1"}


@pytest.mark.parametrize("overrides, message", [
    (["frontend.trace_clock=fast"],
     r"^frontend\.trace_clock: 'fast' is not a trace clock \(expected dram, ns, or a "
     r"frequency such as 1200 MHz or 3\.2 GHz\)$"),
    (["frontend.trace_clock=ns", "frontend.mode=afap"],
     r"^frontend\.trace_clock: 'ns' with frontend\.mode: afap: not used \(requests enter as "
     r"fast as possible, their timestamps unused\); leave it unset$"),
    (["frontend.trace_clock=ns", "frontend.mode=cores", "frontend.cores=[a.trace]"],
     r"^frontend\.trace_clock: 'ns' with frontend\.mode: cores: not used \(the cores read "
     r"instruction gaps, which have no time base\); leave it unset$"),
    (["frontend.trace_clock=1MHz"],
     r"^frontend\.trace_clock: '1MHz' is 1200 DRAM cycles of DDR4_2400R per tick, above "
     r"the maximum 1000$"),
])
def test_trace_clock_key_errors(overrides, message):
    with pytest.raises(ConfigError, match=message):
        config.load(None, overrides)


def test_example_trace_replays_at_the_same_rate_on_ddr5():
    """The example declares DDR4-2400's 1200 MHz clock: on DDR5-4800 its requests enter
    at twice the cycles, the same times in ns."""
    reader = open_trace(EXAMPLE)
    assert reader.clock == (clock_mod.parse("1200 MHz"), 6)
    chunk = reader.read_all()
    declared = sim.run(EXAMPLE, DDR5, progress=False)
    by_hand = sim.run_arrays(chunk.addr, chunk.is_write, 2 * chunk.cycle, DDR5,
                             progress=False)
    assert simulated(declared) == simulated(by_hand)


def test_the_documented_example_runs(tmp_path):
    """docs/reference/traces.md: the commands as shown, their latencies, and the note the
    DDR5 run prints."""
    import subprocess
    import sys

    doc = (ROOT / "docs" / "reference" / "traces.md").read_text()
    shown = next(line.strip() for line in doc.splitlines() if "memsim: note:" in line)
    latency = dict(re.findall(r"^\| `([a-z0-9_]+)` \| ([0-9.]+) ns \|$", doc, re.M))
    commands = re.findall(r"^    memsim (run traces/example_mix\.trace -c ([a-z0-9_]+))$",
                          doc, re.M)
    assert [preset for _, preset in commands] == [DDR4, DDR5] == list(latency)
    for command, preset in commands:
        out = tmp_path / f"{preset}.json"
        proc = subprocess.run([sys.executable, "-m", "memsim", *command.split(), "--json",
                               out], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        notes = [line for line in proc.stderr.splitlines() if "note:" in line]
        assert notes == ([shown] if preset == DDR5 else [])
        s = json.loads(out.read_text())
        assert f"{s['latency_ns']['read']['mean']:.2f}" == latency[preset]
        assert f"{s['bandwidth_gbps']['total']:.2f}" == "7.68"


def test_trace_info_says_what_the_cycles_count(capsys):
    from memsim.cli import main

    assert main(["trace", "info", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "clock:       1200 MHz (its '# clock:' header, line 6)"
