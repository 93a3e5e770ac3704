"""Power data of a standard with no IDD source at hand (LPDDR5, HBM3): every current is
NaN, so energy results are NaN and say why (``energy.model.source``), unless the
config's ``dram.power`` gives every value."""

from __future__ import annotations

import math

# the supply voltage and the IDD currents memsim's energy model reads (memsim.energy)
NAMES = ("VDD", "IDD0", "IDD2N", "IDD3N", "IDD4R", "IDD4W", "IDD5", "IDD2P", "IDD3P", "IDD6")


def unknown(source: str, overrides=None) -> dict:
    """Every value NaN but those ``overrides`` gives, plus ``source``: ``source`` while
    any value is still NaN, else "dram.power"."""
    out = dict.fromkeys(NAMES, math.nan)
    if overrides:
        out.update(overrides)
    out["source"] = source if any(math.isnan(out[k]) for k in NAMES) else "dram.power"
    return out
