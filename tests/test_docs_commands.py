"""Every command the README and the docs' pages show is run, in document order, and
its output is compared with the output shown under it.

The pages run in order in one fresh directory that holds the repository's ``configs/``
and ``traces/`` (linked) and copies of ``benchmarks/`` and ``examples/``, so what the
commands write (``results/``, ``docs/figures/``) stays there; a page that runs a sweep
the README already ran (the same command) reuses its stored runs, as a user's would.
``memsim`` and ``python`` are this interpreter with this checkout's memsim. A figure's
command is run where the figure stands, and must write the figure's file.

The long commands (the tutorials' benchmarks) run at a reduced size: the exact command
line shown, with the options of ``REDUCED`` appended, each a size option the page
documents. ``python -m pip install`` lines are not run (the suite never installs);
``tests/test_readme.py`` checks them against ``.ci/run`` and ``pyproject.toml``.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doc_pages import ROOT, run_pages, steps

# command as shown -> options the test appends (a size option the page documents)
REDUCED = {
    "python benchmarks/eruca.py -o results/eruca":
        "-n 1000 --core-requests 400 --instructions 2000",
    "python benchmarks/nda.py --figure docs/figures/nda.png": "--requests 2000",
    "python benchmarks/nda.py --figure results/nda.png": "--requests 2000",
    "python benchmarks/nda.py -o results/nda-bench": "--requests 1500 --core-instructions 3000",
    "python benchmarks/ecc.py -o results/ecc-bench": "-n 2000",
    "python benchmarks/ddr5_refresh.py -o results/ddr5_refresh.png": "-n 2000 --seeds 2",
    "python benchmarks/ddr5_refresh.py -o docs/figures/ddr5_refresh.png": "-n 2000 --seeds 2",
    "python benchmarks/throughput.py": "-n 20000 --repeat 1",
    "python benchmarks/cores.py": "-n 2000",
    "python benchmarks/fidelity.py": "-n 2000",
    "python benchmarks/workloads.py": "-n 100000 --mixes 1 --traces gups svrg",
    "python benchmarks/standards_figure.py -o docs/figures/standards.png": "-n 2000",
    "python examples/tensordimm.py -o results/tensordimm": "--lookups 256",
    "python examples/tensordimm.py -o docs/figures": "--lookups 256",
}
# commands that need what the suite does not have; the page says what
EXTERNAL = {
    "python benchmarks/anchors.py": "needs Ramulator 2 and DRAMsim3 built from source",
}
# a running Dask scheduler's address in the docs, and the test's local cluster's
DASK_ADDRESS = "tcp://SCHEDULER:8786"
# lines of output that differ from run to run (timing, the first run's compile notice)
VARIABLE = re.compile(r"^(wall time|memsim: compiling|\d+ runs? \(.* in [\d.]+ s)")

PAGES = run_pages()


def _workdir(tmp: Path) -> Path:
    for name in ("configs", "traces"):
        (tmp / name).symlink_to(ROOT / name)
    for name in ("benchmarks", "examples"):
        shutil.copytree(ROOT / name, tmp / name,
                        ignore=shutil.ignore_patterns("__pycache__", "results"))
    (tmp / "results").mkdir()
    (tmp / "docs" / "figures").mkdir(parents=True)
    bin_dir = tmp / ".bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    memsim = bin_dir / "memsim"
    memsim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m memsim "$@"\n')
    memsim.chmod(0o755)
    return bin_dir


def _env(bin_dir: Path) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    return env


def _run(args, cwd, env, what) -> str:
    out = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=900)
    assert out.returncode == 0, f"{what} exited {out.returncode}:\n{out.stdout[-4000:]}"
    return out.stdout


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()
            if not VARIABLE.match(line.strip())]


def _expect_shown(shown: str, printed: str, where: str) -> None:
    """The lines shown appear in the printed output, together and in order (a page may
    show an excerpt)."""
    want, got = _lines(shown), _lines(printed)
    starts = [i for i, line in enumerate(got) if line == want[0]]
    if any(got[i:i + len(want)] == want for i in starts):
        return
    near = got[starts[0]:starts[0] + len(want)] if starts else got[:len(want)]
    raise AssertionError(f"{where}: output differs from the page:\n" + "\n".join(
        difflib.unified_diff(want, near, "page", "printed", lineterm="")))


def _reduced(cmd: str) -> str | None:
    return next((extra for shown, extra in REDUCED.items()
                 if cmd == shown or cmd.startswith(shown + " ")), None)


def _command(cmd: str, cluster_address: str | None) -> str:
    extra = _reduced(cmd)
    if extra:
        return f"{cmd} {extra}"
    if DASK_ADDRESS in cmd:
        assert cluster_address, "a Dask cluster command needs the test's cluster"
        return cmd.replace(DASK_ADDRESS, cluster_address)
    return cmd


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    work = tmp_path_factory.mktemp("docs-commands")
    return work, _env(_workdir(work))


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_command_on_the_page_runs_and_prints_what_it_shows(page, workdir, request):
    work_steps = steps(page)
    needs_cluster = any(DASK_ADDRESS in s.text for s in work_steps)
    address = request.getfixturevalue("dask_cluster") if needs_cluster else None
    tmp_path, env = workdir
    printed = None
    for step in work_steps:
        where = f"{page.relative_to(ROOT)}:{step.line}"
        if step.kind == "sh":
            if step.text.startswith("python -m pip install"):
                printed = None
                continue
            if any(step.text.startswith(c) for c in EXTERNAL):
                assert (ROOT / step.text.split()[1]).is_file(), where
                printed = None
                continue
            printed = _run(["bash", "-c", _command(step.text, address)], tmp_path, env, where)
            if _reduced(step.text):
                printed = None  # the page shows the full size's output
        elif step.kind == "python":
            printed = _run([sys.executable, "-c", step.text], tmp_path, env, where)
        elif step.kind == "output" and printed is not None:
            _expect_shown(step.text, printed, where)
        elif step.kind == "figure":
            assert step.text, f"{where}: figure {step.figure} has no command beside it"
            target = tmp_path / "docs" / "figures" / Path(step.figure).name
            target.unlink(missing_ok=True)
            _run(["bash", "-c", _command(step.text, address)], tmp_path, env, where)
            assert target.is_file(), f"{where}: `{step.text}` did not write {target.name}"


def test_every_reduced_or_external_command_is_on_a_page():
    shown = {s.text for p in PAGES for s in steps(p) if s.kind in ("sh", "figure")}
    for cmd in [*REDUCED, *EXTERNAL]:
        assert any(s == cmd or s.startswith(cmd + " ") for s in shown), \
            f"{cmd!r} is on no page: drop it from the test"
