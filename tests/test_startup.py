"""Start-up and feedback: what ``memsim run`` imports, the compile notice, progress bars."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memsim import cli, compiling, sim
from memsim.trace import cli as trace_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "traces" / "example_mix.trace"


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_running_a_text_trace_imports_no_pandas_pyarrow_matplotlib_or_dask():
    code = ("import sys\n"
            "from memsim.cli import main\n"
            f"assert main(['run', {str(EXAMPLE)!r}, '-q']) == 0\n"
            "heavy = ('pandas', 'pyarrow', 'matplotlib', 'dask', 'distributed', 'tqdm')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    assert out.strip() == "[]"


def test_the_command_log_brings_in_pyarrow_only_when_asked_for(tmp_path):
    code = ("import sys\n"
            "from memsim.cli import main\n"
            f"assert main(['run', {str(EXAMPLE)!r}, '-q', '--json', "
            f"{str(tmp_path / 'r.json')!r}, '--csv', {str(tmp_path / 'r.csv')!r}]) == 0\n"
            "print('pandas' in sys.modules, 'pyarrow' in sys.modules)\n"
            f"assert main(['run', {str(EXAMPLE)!r}, '-q', '--cmd-log', "
            f"{str(tmp_path / 'c.csv')!r}]) == 0\n"
            "print('pandas' in sys.modules, 'pyarrow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    assert out.split("\n")[:2] == ["False False", "False True"]


def test_summary_says_whether_the_engine_was_compiled_or_loaded():
    result = sim.run(EXAMPLE)  # the engine is loaded in this process by now
    s = result.summary()
    assert s["jit_compiled"] is False
    assert isinstance(s["jit_seconds"], float)
    last = result.table().splitlines()[-1]
    assert last.startswith("wall time") and last.endswith(
        f"; engine loaded in {s['jit_seconds']:.2f} s")
    result.jit_compiled, result.jit_seconds = True, 47.25
    assert result.table().splitlines()[-1].endswith("; engine compiled in 47.25 s")


def _notice(line: str) -> bool:
    return line.startswith("memsim: compiling the plain loop (plain DDR4/DDR5/LPDDR5) once, about ")


def test_compile_notice_printed_when_the_engine_must_be_compiled(monkeypatch, capsys):
    monkeypatch.setattr(compiling, "needs_compiling", lambda features=0: True)
    sim.run_arrays([0, 64, 128])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and _notice(err[0]), err  # (loaded in fact: no "compiled" line)
    sim.run_arrays([0, 64, 128], progress=False)  # quiet: no notice
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(compiling, "needs_compiling", lambda features=0: False)
    sim.run_arrays([0, 64, 128])
    assert capsys.readouterr().err == ""


def test_compile_notice_after_a_long_warm_up_when_the_cache_state_is_unknown(monkeypatch,
                                                                            capsys):
    import time

    class SlowEngine:  # a warm-up that takes long: a compilation
        features = 0

        def warm_up(self, on_wait=None):
            time.sleep(0.5)

    monkeypatch.setattr(compiling, "needs_compiling", lambda features=0: None)
    monkeypatch.setattr(compiling, "NOTICE_AFTER_SECONDS", 0.05)
    compiling.warm_up(SlowEngine(), notify=True)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and _notice(err[0]), err
    monkeypatch.setattr(compiling, "NOTICE_AFTER_SECONDS", 5.0)
    SlowEngine.warm_up = lambda self, on_wait=None: None  # a quick cache load
    compiling.warm_up(SlowEngine(), notify=True)
    time.sleep(0.1)
    assert capsys.readouterr().err == ""


def test_engine_is_known_to_be_loaded_in_this_process():
    sim.run_arrays([0])
    assert compiling.needs_compiling(0) is False


def _every_update(make):
    """A progress-bar factory whose bars draw every update (not at most every 0.1 s)."""
    def bar(*args, **kw):
        b = make(*args, **kw)
        if b is not None:
            b.options.update(mininterval=0, miniters=1)
        return b
    return bar


def test_progress_bar_only_on_a_terminal_and_only_on_long_runs(monkeypatch):
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(sim, "PROGRESS_DELAY_SECONDS", 0.0)
    monkeypatch.setattr(sim, "_progress_bar", _every_update(sim._progress_bar))
    sim.run(EXAMPLE, chunk_size=5000)
    shown = fake.getvalue()
    assert "simulating" in shown and "20.0k" in shown  # the 20,000 requests counted

    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(sim, "PROGRESS_DELAY_SECONDS", 60.0)
    sim.run(EXAMPLE)  # far shorter than the delay: no bar
    assert fake.getvalue() == ""

    not_a_tty = io.StringIO()
    monkeypatch.setattr(sys, "stderr", not_a_tty)
    monkeypatch.setattr(sim, "PROGRESS_DELAY_SECONDS", 0.0)
    sim.run(EXAMPLE)
    assert not_a_tty.getvalue() == ""


def test_binary_traces_show_a_bar_with_a_total(monkeypatch, tmp_path):
    from memsim.trace import generate, write_trace

    path = tmp_path / "t.npy"
    write_trace(path, *generate("random", 3000, footprint_bytes=1 << 24))
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(sim, "PROGRESS_DELAY_SECONDS", 0.0)
    monkeypatch.setattr(sim, "_progress_bar", _every_update(sim._progress_bar))
    sim.run(path)
    assert "3.00k/3.00k" in fake.getvalue()


def test_quiet_run_prints_nothing_even_on_a_terminal(monkeypatch, capsys):
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(sim, "PROGRESS_DELAY_SECONDS", 0.0)
    monkeypatch.setattr(compiling, "needs_compiling", lambda features=0: True)
    monkeypatch.setattr(sim, "_progress_bar", _every_update(sim._progress_bar))
    assert cli.main(["run", str(EXAMPLE), "-q"]) == 0
    assert fake.getvalue() == "" and capsys.readouterr().out == ""
    assert cli.main(["run", str(EXAMPLE)]) == 0
    assert "compiling the plain loop" in fake.getvalue() and "simulating" in fake.getvalue()
    assert capsys.readouterr().out.startswith("system ")


def test_trace_gen_progress_and_quiet(monkeypatch, tmp_path, capsys):
    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    monkeypatch.setattr(trace_cli, "_progress_bar",
                        _every_update(_instant_bar(trace_cli._progress_bar)))
    out = tmp_path / "g.trace"
    assert cli.main(["trace", "gen", "random", "-n", "200000", "-o", str(out)]) == 0
    assert "writing" in fake.getvalue() and "200k/200k" in fake.getvalue()
    assert capsys.readouterr().out.startswith("wrote 200000 requests")
    fake.seek(0)
    fake.truncate()
    assert cli.main(["trace", "gen", "random", "-n", "200000", "-o", str(out), "-q"]) == 0
    assert fake.getvalue() == "" and capsys.readouterr().out == ""


def _instant_bar(make):
    """The trace-gen bar without its two-second delay."""
    def bar(*args, **kw):
        b = make(*args, **kw)
        if b is not None:
            b.delay = 0
        return b
    return bar


@pytest.mark.parametrize("name", ["r.json"])
def test_json_reports_the_skipped_line_count_and_the_summary_says_it(tmp_path, name, capsys):
    trace = tmp_path / "bad.trace"
    trace.write_text("0 R 0x0\nnonsense\n5 W 0x40\n7 X 0x80\n")
    assert cli.main(["run", str(trace), "--skip-bad-lines", "--json",
                     str(tmp_path / name)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "requests          1 reads, 1 writes (2 bad trace lines skipped)"
    assert json.loads((tmp_path / name).read_text())["trace"]["bad_lines_skipped"] == 2
    trace.write_text("0 R 0x0\nnonsense\n")
    assert cli.main(["run", str(trace), "--skip-bad-lines"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == \
        "requests          1 reads, 0 writes (1 bad trace line skipped)"


def test_lazy_bar_appears_only_after_its_delay(monkeypatch):
    from memsim.progress import LazyBar

    fake = FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    slow = LazyBar(100, delay=60.0, desc="x")
    slow.update(40)
    slow.close()
    assert slow.bar is None and slow.count == 40 and fake.getvalue() == ""
    quick = LazyBar(100, delay=0.0, desc="x", mininterval=0, miniters=1, file=fake)
    quick.update(40)
    quick.update(10)
    assert quick.bar is not None and quick.bar.n == 50
    quick.close()
    assert "50.0/100" in fake.getvalue()  # unit_scale formats counts as 50.0
