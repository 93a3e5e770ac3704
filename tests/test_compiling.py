"""memsim.compiling and `memsim warm`: which variant compiles, its estimate, the progress a
user sees while it compiles or while another process compiles it, and compiling ahead of
time."""

from __future__ import annotations

import io
import os
import threading
import time

import pytest

from memsim import cli, compiling, config, warm
from memsim.engine import compile_lock, layout


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_every_variant_has_a_name_and_a_config_that_selects_it():
    for name, v in compiling.VARIANTS.items():
        assert compiling.variant_name(v.features) == name
        cfg = config.load(v.preset, [*v.overrides] + (["frontend.mode=cores"] if v.cores
                                                      else []))
        assert warm.needed(cfg) == [v.features], name
    assert compiling.variant_name(layout.F_NDA | layout.F_ECC) == "nda+ecc"


def test_an_estimate_is_the_last_compile_measured_here(monkeypatch, tmp_path):
    monkeypatch.setattr(compiling, "_cache_dir", lambda: tmp_path)
    seconds, source = compiling.estimate_seconds(layout.F_NDA | layout.F_CORES)
    assert (seconds, source) == (46.8, "on an idle 2-core machine")
    compiling.record(layout.F_NDA | layout.F_CORES, wall_s=71.04, cpu_s=55.0)
    seconds, source = compiling.estimate_seconds(layout.F_NDA | layout.F_CORES)
    assert seconds == 71.0 and source.startswith("as measured here on 20")
    assert compiling.estimate_seconds(0)[1] == "on an idle 2-core machine"  # (its own)
    assert [p.name for p in tmp_path.iterdir()] == ["memsim-compile-time-nda-opt1.json"]


def test_off_a_terminal_one_line_before_and_one_after():
    out = io.StringIO()
    progress = compiling.Progress(layout.F_SUBBANK | layout.F_CORES, enabled=True,
                                  stream=out)
    progress.begin()
    progress.end(compiled=True)
    first, second = out.getvalue().splitlines()
    assert first.startswith("memsim: compiling the subbanks loop (sub-banks (ERUCA, SALP, "
                            "MASA)) once, about ")
    assert first.endswith("; later runs load it")
    assert second.startswith("memsim: compiled the subbanks loop") and second.endswith(" s")


def test_on_a_terminal_a_bar_that_moves_every_heartbeat(monkeypatch):
    monkeypatch.setattr(compiling, "HEARTBEAT_SECONDS", 0.05)
    out = FakeTTY()
    progress = compiling.Progress(0, enabled=True, stream=out)
    progress.begin()
    time.sleep(1.6)
    progress.end(compiled=True)
    text = out.getvalue()
    assert text.startswith("memsim: compiling the plain loop (plain DDR4/DDR5/LPDDR5) once, about")
    frames = [f for f in text.split("\r") if f.startswith("plain ")]
    assert len(frames) >= 10  # a frame every heartbeat, not just one at the start
    shown = [int(f.split()[-2].split("/")[0]) for f in frames]  # elapsed "n/estimate s"
    assert shown[0] == 0 and shown[-1] >= 1 and shown == sorted(shown)


def test_nothing_at_all_when_quiet():
    out = FakeTTY()
    progress = compiling.Progress(0, enabled=False, stream=out)
    progress.begin()
    progress.end(compiled=True)
    assert out.getvalue() == ""


def test_a_process_waiting_for_another_ones_compile_says_so():
    # a lock of this test's own: the plain loop's lock may be held by another test
    # worker compiling or loading that loop
    key = f"test-waiting-{os.getpid()}"
    holding, release, waited = threading.Event(), threading.Event(), []

    def other():  # (flock: two open files of one process lock each other too)
        with compile_lock(key):
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    assert holding.wait(10)
    threading.Timer(0.3, release.set).start()
    t0 = time.perf_counter()
    with compile_lock(key, on_wait=lambda: waited.append(time.perf_counter() - t0)):
        got = time.perf_counter() - t0
    thread.join()
    assert len(waited) == 1 and waited[0] < 0.2 and got >= 0.3
    waited.clear()
    with compile_lock(key, on_wait=lambda: waited.append(1)):  # free: no wait, no word
        pass
    assert waited == []


def test_waiting_message():
    out = io.StringIO()
    compiling.Progress(layout.F_ECC, enabled=True, stream=out).begin(waiting=True)
    assert out.getvalue() == ("memsim: waiting for another memsim process compiling the "
                              "ecc loop (ECC with extra accesses)\n")


def test_warm_a_config_in_this_process(capsys):
    assert cli.main(["warm", "-c", "ddr4_2400_x8_1ch1r", "-j", "1"]) == 0
    out = capsys.readouterr().out.split()
    assert out[0] == "plain" and out[1] in ("compiled", "already") and "wall" in out


def test_warm_all_without_a_config(capsys):
    with pytest.raises(SystemExit):
        cli.main(["warm", "--all", "-j", "0"])
    assert "expected a positive integer, got '0'" in capsys.readouterr().err
    assert cli.main(["warm", "--all", "-c", "ddr4_2400_x8_1ch1r"]) == 2
    assert "--all compiles every variant" in capsys.readouterr().err


@pytest.mark.slow
def test_warm_all_compiles_or_loads_every_variant(capsys):
    assert cli.main(["warm", "--all", "-j", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(compiling.VARIANTS)
    assert cli.main(["warm", "--all", "-j", "2"]) == 0  # now every one is in the cache
    again = capsys.readouterr().out.splitlines()
    assert all(" already in the cache " in line for line in again), again


def test_a_short_wait_for_the_lock_is_a_load_and_says_nothing(monkeypatch, capsys):
    """The lock is held while another process loads a variant too (well under a
    second): only a wait past WAIT_NOTICE_SECONDS is said to be for a compile."""
    class Waiting:  # an engine whose warm-up waits for the lock, then for `wait` s
        features = 0
        wait = 0.0

        def warm_up(self, on_wait=None):
            on_wait()
            time.sleep(self.wait)

    monkeypatch.setattr(compiling, "needs_compiling", lambda features=0: False)
    monkeypatch.setattr(compiling, "WAIT_NOTICE_SECONDS", 0.2)
    Waiting.wait = 0.05
    compiling.warm_up(Waiting(), notify=True)
    time.sleep(0.3)
    assert capsys.readouterr().err == ""
    Waiting.wait = 0.5
    compiling.warm_up(Waiting(), notify=True)
    assert capsys.readouterr().err == ("memsim: waiting for another memsim process "
                                       "compiling the plain loop (plain DDR4/DDR5/LPDDR5)\n")
