"""The DRAM standards memsim knows, as data: ``dram.standard`` -> its
:class:`memsim.dram.standard.Standard` (the data module's names, declared and checked:
commands and levels, organisations, speed bins, the constraint table, refresh modes,
the NDA source scopes, the timing sanity rules, power). Adding a standard means adding
such a module and registering it here, plus presets; the config, the device resolution
(memsim.dram.device) and the spec compiler (memsim.dram.spec) read whichever standard a
config names."""

from __future__ import annotations

from memsim.dram import ddr4, ddr5, hbm3, lpddr5
from memsim.dram.standard import Standard

STANDARDS: dict[str, Standard] = {m.NAME: Standard.of(m) for m in (ddr4, ddr5, lpddr5, hbm3)}


def standard(name: str) -> Standard:
    """The standard called ``name`` (``dram.standard``)."""
    return STANDARDS[name]
