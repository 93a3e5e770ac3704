"""The DRAM standards memsim knows, as data: ``dram.standard`` -> a module shaped like
:mod:`memsim.dram.ddr4` (commands and levels, organisations, speed bins, the constraint
table, the NDA source scopes, the timing sanity rules, power). Adding a standard means
adding such a module and registering it here, plus presets; the config, the device
resolution (memsim.dram.device) and the spec compiler (memsim.dram.spec) read whichever
module a config names."""

from __future__ import annotations

from types import ModuleType

from memsim.dram import ddr4, ddr5

STANDARDS: dict[str, ModuleType] = {ddr4.NAME: ddr4, ddr5.NAME: ddr5}


def standard(name: str) -> ModuleType:
    """The data module of the standard called ``name`` (``dram.standard``)."""
    return STANDARDS[name]
