"""Start-up and exit of the memsim command: numba's BLAS probe (an import of scipy.linalg,
about half of loading the cached engine) is skipped while the engine loads, and the
process's objects are frozen before it exits; elsewhere nothing changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "traces" / "example_mix.trace"


def _python(code: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                          capture_output=True, text=True, timeout=300).stdout.split()


@pytest.mark.parametrize("skip", [True, False])
def test_the_probe_is_skipped_only_when_asked_and_scipy_imports_afterwards(skip):
    code = ("import sys\n"
            "from memsim.engine import jit\n"
            f"jit.SKIP_BLAS_PROBE = {skip}\n"
            "with jit.blas_probe_skipped():\n"
            "    from numba.np import arraymath  # (numba's first load imports it)\n"
            "print(arraymath._HAVE_BLAS, 'scipy.linalg' in sys.modules)\n"
            "import scipy.linalg.cython_blas\n"
            "print(scipy.linalg.cython_blas.__name__)\n")
    have_blas, scipy_loaded, after = _python(code)
    assert (have_blas, scipy_loaded) == (("False", "False") if skip else ("True", "True"))
    assert after == "scipy.linalg.cython_blas"


def test_memsim_run_loads_the_engine_without_scipy():
    code = ("import sys\n"
            "from memsim.cli import main\n"
            f"assert main(['run', {str(EXAMPLE)!r}, '-q']) == 0\n"
            "print('numba' in sys.modules, 'scipy.linalg' in sys.modules)\n")
    assert _python(code) == ["True", "False"]


def test_the_command_freezes_its_objects_before_exit_and_a_call_with_argv_does_not():
    code = ("import gc, sys\n"
            "from memsim.cli import main\n"
            f"assert main(['run', {str(EXAMPLE)!r}, '-q']) == 0\n"
            "print(gc.get_freeze_count())\n"
            f"sys.argv = ['memsim', 'run', {str(EXAMPLE)!r}, '-q']\n"
            "assert main() == 0\n"
            "print(gc.get_freeze_count() > 0)\n")
    assert _python(code) == ["0", "True"]



@pytest.mark.parametrize("nrt", [False, True])
def test_a_cached_function_loads_without_numbas_registries_and_still_compiles(tmp_path,
                                                                              nrt):
    # a tiny cached function of our own (tmp_path: an empty numba cache), called twice in
    # fresh processes under registries_deferred: compiled the first time (numba's
    # compiler installs its registries: numba.np.arraymath comes in), loaded the second,
    # without them if it needs no runtime (_nrt=False, like the engine); either way the
    # right sum, and a later compilation works
    (tmp_path / "cached_sum.py").write_text(
        f"import numba\n\n\n@numba.njit(cache=True, _nrt={nrt})\n"
        "def total(a):\n    s = 0\n    for x in a:\n        s += x\n    return s\n")
    code = ("import sys\n"
            f"sys.path.insert(0, {str(tmp_path)!r})\n"
            "import numba, numpy as np\n"
            "import cached_sum\n"
            "from memsim.engine import jit\n"
            "with jit.registries_deferred(cached_sum.total):\n"
            "    got = cached_sum.total(np.arange(5))\n"
            "stats = cached_sum.total.stats\n"
            "print(got, sum(stats.cache_hits.values()), sum(stats.cache_misses.values()),\n"
            "      'numba.np.arraymath' in sys.modules,\n"
            "      'load_overload' in vars(cached_sum.total._cache))\n"
            "print(numba.njit(lambda a: a.max())(np.arange(3)))\n")
    assert _python(code) == ["10", "0", "1", "True", "False", "2"]
    assert _python(code) == ["10", "1", "0", str(nrt), "False", "2"]


@pytest.mark.parametrize("preset", [None, "3"])
def test_the_command_asks_openblas_for_one_thread_unless_the_user_chose(preset):
    # memsim.command runs before numpy is imported; memsim used as a library (importing
    # memsim.cli directly) leaves the setting alone
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    command = ("import os, sys\n"
               "sys.argv = ['memsim', '--version']\n"
               "from memsim.command import main\n"
               "try:\n"
               "    main()\n"
               "except SystemExit:\n"
               "    pass\n"
               "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    library = "import os, memsim.cli\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    outs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                           capture_output=True, text=True, timeout=300).stdout.split()[-1]
            for code in (command, library)]
    assert outs == ([preset, preset] if preset else ["1", "None"])
