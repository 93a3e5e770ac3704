"""The DDR5 presets spread consecutive lines over sub-channels and bank groups
(docs/reference/ddr5.md "Address mapping"), and the DDR4 presets keep their order."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import DDR5_PRESETS, resolve

from memsim import config

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "reference" / "ddr5.md").read_text()


@pytest.mark.parametrize("preset", DDR5_PRESETS)
def test_consecutive_lines_alternate_sub_channels_then_bank_groups(preset):
    cfg, spec, mapping = resolve(preset)
    assert cfg.mapping.order == "ro-ba-ra-co-bg-ch"
    ch = cfg.dram.channels
    n = ch * 8 * 2  # every sub-channel and bank group twice
    d = mapping.decode(np.arange(n, dtype=np.int64) * 64)
    line = np.arange(n)
    # the flat bank is ((channel * ranks + rank) * bank groups + bank group) * banks + bank
    per_channel = spec.ranks * spec.bankgroups * spec.banks_per_group
    assert (d.bank // per_channel).tolist() == (line % ch).tolist()
    assert (d.bank // spec.banks_per_group % spec.bankgroups).tolist() == \
        (line // ch % 8).tolist()
    assert (d.bank % spec.banks_per_group).tolist() == [0] * n
    assert d.column.tolist() == (line // (ch * 8) * spec.burst_length).tolist()
    assert set(d.row.tolist()) == {0}


def test_ddr4_presets_keep_their_order():
    for preset in config.list_presets():
        cfg = config.load(preset)
        if cfg.dram.standard == "DDR4":
            assert cfg.mapping.order == "ro-ba-bg-ra-co-ch", preset


def test_the_documented_bandwidths(tmp_path):
    """The commands of the 'Address mapping' table, run as shown."""
    block = DOC.split("**Address mapping.**")[1].split("A config that gives")[0]
    commands = [c.replace("\\\n", " ") for c in
                re.findall(r"^    (memsim run .*?(?:\\\n.*?)*)$", block, re.M)]
    rows = re.findall(r"^\| `(ro-[a-z-]+)` \(.*?\) \| ([0-9.]+) GB/s \| ([0-9,.]+) ns \|$",
                      block, re.M)
    assert len(commands) == len(rows) == 2
    for command, (order, gbps, ns) in zip(commands, rows, strict=True):
        out = tmp_path / "r.json"
        argv = command.split()[2:]
        proc = subprocess.run([sys.executable, "-m", "memsim", "run", *argv, "-q", "--json",
                               out], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        s = json.loads(out.read_text())
        assert s["config"]["mapping"]["order"] == order
        assert f"{s['bandwidth_gbps']['total']:.2f}" == gbps
        assert f"{s['latency_ns']['read']['mean']:,.1f}" == ns
