"""``import memsim`` offers by name what a user needs (``memsim.__all__``), loaded on
first use so that importing memsim stays cheap."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import types
from pathlib import Path

import pytest

import memsim

ROOT = Path(__file__).resolve().parent.parent
NAMES = [n for n in memsim.__all__ if n != "__version__"]


def test_importing_memsim_imports_neither_numpy_nor_numba():
    code = ("import sys, memsim; memsim.__version__; dir(memsim); "
            "print(sorted(m for m in ('numpy', 'numba', 'pandas', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"


def test_a_name_is_imported_on_first_use():
    code = ("import sys, memsim; assert 'memsim.config' not in sys.modules; "
            "memsim.describe_keys; assert 'memsim.config' in sys.modules; "
            "assert 'numba' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, timeout=60, check=True)


def test_all_lists_the_front_door():
    assert memsim.__all__ == [
        "__version__", "run", "run_arrays", "run_cores", "MemorySystem", "load_config",
        "Config", "describe_keys", "list_presets", "open_trace", "write_trace", "Result",
        "ConfigError", "ConfigWarning", "TraceError", "AddressError", "StarvationError"]
    assert len(set(memsim.__all__)) == len(memsim.__all__)
    assert isinstance(memsim.__version__, str) and memsim.__version__.count(".") == 2


@pytest.mark.parametrize("name", NAMES)
def test_each_name_resolves_to_a_documented_object(name):
    obj = getattr(memsim, name)
    doc = obj.__doc__ or ""
    assert doc.strip(), name
    if dataclasses.is_dataclass(obj):  # not the signature a dataclass gets by default
        assert not doc.startswith(f"{obj.__name__}("), name
    # the object of its own module, not a copy
    module, attribute = memsim._EXPORTS[name]
    assert obj is getattr(sys.modules[module], attribute)


def test_the_names_are_the_ones_the_modules_define():
    from memsim import config, errors, multicore, sim, trace

    assert memsim.run is sim.run and memsim.run_arrays is sim.run_arrays
    assert memsim.run_cores is multicore.run_cores
    assert memsim.load_config is config.load and memsim.Config is config.Config
    assert memsim.ConfigError is config.ConfigError is errors.ConfigError
    assert memsim.TraceError is trace.TraceError


def test_nothing_public_is_missing_from_all():
    """Every public name of the package that is not a submodule is in __all__ (after every
    front-door name has been loaded, and memsim's modules imported)."""
    for name in NAMES:
        getattr(memsim, name)
    public = {n for n in dir(memsim) if not n.startswith("_")
              and not isinstance(getattr(memsim, n), types.ModuleType)}
    assert public == set(NAMES)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match=r"^module 'memsim' has no attribute 'nope'$"):
        memsim.nope  # noqa: B018


def test_the_front_door_runs_a_trace():
    result = memsim.run(ROOT / "traces" / "example_mix.trace",
                        memsim.load_config("ddr4_2400_x8_1ch1r"), progress=False)
    assert isinstance(result, memsim.Result)
    assert (result.reads, result.writes) == (14000, 6000)


def test_memsim_describes_itself_as_it_is():
    """pyproject, --help and the package docstring say DDR4, DDR5 and LPDDR5 and the
    mechanisms;
    --version is memsim's version."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    helptext = subprocess.run([sys.executable, "-m", "memsim", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=True).stdout
    flat = " ".join(helptext.split())
    for text in (project["description"], flat, " ".join(memsim.__doc__.split())):
        assert "DDR4" in text and "DDR5" in text and "LPDDR5" in text
        for mechanism in ("sub-banks", "near-data accelerators", "ECC", "cores", "SimPy"):
            assert mechanism in text, (mechanism, text[:80])
    assert "DDR4 memory-system simulator" not in flat
    version = subprocess.run([sys.executable, "-m", "memsim", "--version"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, check=True).stdout
    assert version == f"memsim {memsim.__version__}\n" == f"memsim {project['version']}\n"
