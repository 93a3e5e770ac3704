"""Compiled-table A/B set: fingerprints of what every config compiles to, to prove a
refactor of the path from YAML to the engine's tables changed nothing.

    PYTHONPATH=CHECKOUT python benchmarks/ab_tables.py -o before.json   # in the old tree
    PYTHONPATH=CHECKOUT python benchmarks/ab_tables.py -o after.json    # in the new tree
    python benchmarks/ab_tables.py --compare before.json after.json

Cases: every preset x ECC scheme (and the parameters that change an ECC scheme's
numbers: write CRC's data mask, DUO's even bursts, a parity latency, an on-die RMW
time) x NDAs off / on; every speed bin x organisation x density of the default preset;
a few timing and power overrides (plain and with sub-banks). For each, the SHA-256 of
every array and number of ``memsim.dram.spec.build(cfg)``, of the config as results
carry it (``config.export``), of ``memsim config show``'s text, of the checker's
interface numbers and sub-bank rules, and of the ECC / NDA pieces read from the spec;
a config that does not validate records its error message instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys

import numpy as np


def _h(value) -> str:
    h = hashlib.sha256()
    if isinstance(value, np.ndarray):
        h.update(str(value.dtype).encode())
        h.update(str(value.shape).encode())
        h.update(np.ascontiguousarray(value).tobytes())
    else:
        h.update(json.dumps(value, sort_keys=True, default=repr).encode())
    return h.hexdigest()[:24]


def _fingerprint(cfg) -> dict:
    from memsim import check
    from memsim import config as config_mod
    from memsim.cli import show_config
    from memsim.dram import spec as spec_mod

    spec = spec_mod.build(cfg)
    out = {}
    for f in dataclasses.fields(spec):
        if f.name == "device":
            continue
        v = getattr(spec, f.name)
        if f.name == "ecc":
            v = dataclasses.asdict(v) if v is not None else None
        out[f"spec.{f.name}"] = _h(v)
    for prop in ("units_per_bank", "banks_per_rank", "bursts_per_row", "rank_bytes",
                 "capacity_bytes", "peak_bandwidth_gbps"):
        out[f"spec.{prop}"] = _h(getattr(spec, prop))
    iface = spec.ecc
    out["ecc.checker"] = _h(dataclasses.asdict(iface.checker(spec.timings)))
    out["ecc.time_scale"] = _h([iface.time_scale, iface.needs_engine, iface.extra_accesses])
    sub = check.subbank_rules(cfg)
    out["check.subbank_rules"] = _h(dataclasses.asdict(sub) if sub is not None else None)
    out["config.export"] = _h(config_mod.export(cfg))
    out["config.resolved_timings"] = _h(config_mod.resolved_timings(cfg))
    out["config show"] = _h(show_config(cfg))
    if cfg.nda.enabled:
        from memsim import nda

        out["nda.bound"] = _h([nda.host_delay_bound(spec, p, 2)
                               for p in ("host_first", "row_hit_cap", "time_slice")])
    return out


def _cases():
    from memsim import config as config_mod
    from memsim import ecc as ecc_mod
    from memsim.dram import ddr4

    ecc_variants = []
    for s in ecc_mod.SCHEMES:
        ecc_variants.append((s, {"ecc.scheme": s}))
    ecc_variants += [
        ("write_crc+dm", {"ecc.scheme": "write_crc", "ecc.crc_data_mask": True}),
        ("aiecc+dm", {"ecc.scheme": "aiecc", "ecc.crc_data_mask": True}),
        ("ca_parity+pl8", {"ecc.scheme": "ca_parity", "ecc.parity_latency_cycles": 8}),
        ("duo+even", {"ecc.scheme": "duo", "ecc.duo_even_bursts": True}),
        ("ondie+rmw9", {"ecc.scheme": "ondie", "ecc.ondie_rmw_cycles": 9}),
        ("secded+decode", {"ecc.scheme": "secded_x72", "ecc.decode_latency_cycles": 3}),
        ("inline+separate", {"ecc.scheme": "inline", "ecc.inline_layout": "separate"}),
    ]
    for preset in config_mod.list_presets():
        for ename, eo in ecc_variants:
            for nda_on in (False, True):
                o = dict(eo)
                if nda_on:
                    o["nda.enabled"] = True
                yield f"{preset}/{ename}/nda={'on' if nda_on else 'off'}", preset, o
    for speed in ddr4.SPEED_BINS:
        for org in ddr4.ORGANISATIONS:
            for density in (4, 8, 16):
                yield (f"bins/{speed}/{org}/{density}", None,
                       {"dram.speed": speed, "dram.org": org, "dram.density_gbit": density})
    yield "override/tRTRS", None, {"dram.timing": {"tRTRS": 1, "tRFC": 500}}
    yield "override/power", None, {"dram.power": {"IDD5": 66, "VDD": 1.25}}
    yield "override/tRCD+ecc", None, {"dram.timing": {"tRCD": 18}, "ecc.scheme": "aiecc",
                                      "ecc.crc_data_mask": True}
    yield ("override/eruca", "ddr4_2400_x8_1ch1r_eruca",
           {"dram.timing": {"tCCD_SB": 5, "tRCD": 17}, "eruca.subbank_act_weight": 0.5})
    yield ("override/salp2", "ddr4_2400_x8_1ch1r_salp2", {"dram.timing": {"tRA": 7}})
    yield ("override/masa-bin", "ddr4_2400_x8_1ch1r_masa", {"dram.speed": "DDR4_3200AA"})


def run(out_path: str) -> None:
    import warnings

    from memsim import config as config_mod

    results = {}
    for name, preset, overrides in _cases():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg = config_mod.load(preset, overrides)
                results[name] = _fingerprint(cfg)
        except (config_mod.ConfigError, ValueError) as e:
            results[name] = {"error": str(e)}
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    errors = sum("error" in v for v in results.values())
    print(f"{len(results)} cases ({errors} refused by the config) -> {out_path}")


def compare(a_path: str, b_path: str) -> int:
    from pathlib import Path

    a, b = (json.loads(Path(p).read_text()) for p in (a_path, b_path))
    bad = 0
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            bad += 1
            keys = sorted(k for k in set(a.get(name, {})) | set(b.get(name, {}))
                          if a.get(name, {}).get(k) != b.get(name, {}).get(k))
            print(f"DIFFERENT {name}: {', '.join(keys)}")
    print(f"{len(a)} / {len(b)} cases; {bad} different")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not args.output:
        ap.error("give -o OUTPUT or --compare BEFORE AFTER")
    run(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
