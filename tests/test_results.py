"""Per-bank and per-rank tables agree with the trace and with the summary."""

import json

import numpy as np

from memsim import config, sim
from memsim.dram import spec as spec_mod
from memsim.mapping import AddressMapping
from memsim.trace import generate


def test_per_bank_counts_match_the_trace_and_the_summary(tmp_path):
    preset = "ddr4_3200_x8_2ch2r"
    _, is_write, addr = generate("random", 3000, seed=11, write_ratio=0.3,
                                 footprint_bytes=1 << 26)
    r = sim.run_arrays(addr, is_write, None, preset)
    s = r.summary()
    per_bank = r.per_bank()

    spec = spec_mod.build(config.load(preset))
    bank = AddressMapping(spec).decode(addr).bank
    expected_reads = np.bincount(bank[~is_write], minlength=len(per_bank))
    expected_writes = np.bincount(bank[is_write], minlength=len(per_bank))
    assert (per_bank["reads"].to_numpy() == expected_reads).all()
    assert (per_bank["writes"].to_numpy() == expected_writes).all()

    totals = per_bank[["hits", "misses", "conflicts", "activates"]].sum()
    assert totals["hits"] == s["row_buffer"]["hits"]
    assert totals["misses"] == s["row_buffer"]["misses"]
    assert totals["conflicts"] == s["row_buffer"]["conflicts"]
    assert totals["activates"] == s["commands"]["ACT"]
    assert len(per_bank) == 2 * 2 * 4 * 4  # channels x ranks x bank groups x banks

    per_rank = r.per_rank()
    assert list(zip(per_rank["channel"], per_rank["rank"], strict=True)) == \
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert per_rank["reads"].sum() == s["requests"]["reads"]

    out = tmp_path / "r.json"
    r.write_json(out)
    assert json.loads(out.read_text())["per_bank"] == per_bank.to_dict(orient="records")
