"""Pairs of features (docs/reference/pairs.md): each pair either works, checked
against a run without the other feature, or is a config error naming both keys.

The working pairs tested elsewhere are listed in that page's table with their tests.
Here: every refused pair's message, and ranks / channels / the replay mode against
each ECC class and each sub-bank scheme. A trace confined to one rank of a 4-rank
system must get exactly the commands it gets with one rank (on that rank, refresh
off: the other ranks' refreshes would share the command bus); the same trace on each
of two channels must get, on each channel, exactly the one-channel commands. Only
loop variants other tests compile (plain, ECC, sub-banks), on traces of 160 requests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import simpy
from helpers import NO_REFRESH, read_log, resolve, violations

from memsim import config, multicore, sim
from memsim.config import ConfigError
from memsim.simpy import MemorySystem

# ---------------------------------------------------------------- refused pairs

NDA = ("dram.ranks=2", "nda.enabled=true")
SALP1 = ("dram.subbank_scheme=salp1", "dram.subbanks_per_bank=2")
ACCESSES = {  # ECC settings that need the engine's ECC variant, and the key they name
    "inline": (("ecc.scheme=inline",), r"ecc.scheme 'inline'"),
    "partial_writes": (("ecc.scheme=secded_x72", "ecc.partial_write_fraction=0.5"),
                       r"ecc.partial_write_fraction 0.5 \(ecc.scheme 'secded_x72'"),
    "decode": (("ecc.scheme=aiecc", "ecc.decode_latency_cycles=2"),
               r"ecc.decode_latency_cycles 2 \(ecc.scheme 'aiecc'"),
}

LOAD_ERRORS = [  # (overrides, the message's start, naming both keys)
    pytest.param((*NDA, *SALP1), r"nda.enabled: .*dram.subbank_scheme: salp1",
                 id="nda+subbanks"),
    pytest.param((*NDA, "ecc.scheme=duo"), r"nda.enabled: .* and ecc.scheme 'duo' ",
                 id="nda+duo"),
    pytest.param((*NDA, "ecc.scheme=chipkill_x8_lockstep", "dram.channels=2"),
                 r"nda.enabled: .* and ecc.scheme 'chipkill_x8_lockstep' ",
                 id="nda+lockstep"),
    *[pytest.param((*NDA, *over), rf"nda.enabled: near-data accelerators and {key}",
                   id=f"nda+{name}") for name, (over, key) in ACCESSES.items()],
    pytest.param((*NDA, "frontend.mode=cores", "nda.interface=packetized"),
                 r"nda.interface: 'packetized' with frontend.mode: cores",
                 id="nda_packetized+cores"),
    *[pytest.param((*SALP1, f"ecc.scheme={s}", *extra),
                   rf"ecc.scheme: '{s}' with dram.subbank_scheme 'salp1'", id=f"subbanks+{s}")
      for s, extra in [("write_crc", ()), ("duo", ()), ("inline", ()),
                       ("chipkill_x8_lockstep", ("dram.channels=2",))]],
    pytest.param(("ecc.scheme=chipkill_x8_lockstep",),
                 r"ecc.scheme: chipkill_x8_lockstep runs channels in lockstep pairs, but "
                 r"dram.channels is 1", id="lockstep+1channel"),
]


@pytest.mark.parametrize(("overrides", "message"), LOAD_ERRORS)
def test_refused_pairs_are_config_errors_naming_both_keys(overrides, message):
    with pytest.raises(ConfigError, match=f"^{message}"):
        config.load(None, list(overrides))


@pytest.mark.parametrize("name", ACCESSES)
def test_ecc_accesses_with_cores_or_simpy_are_config_errors_naming_both(tmp_path, name):
    over, key = ACCESSES[name]
    path = tmp_path / "one.trace"
    path.write_text("0 R 0x0\n")
    # (refused before the loop is compiled: no variant for these)
    with pytest.raises(ConfigError, match=rf"^{key}.* with frontend.mode: cores: not "):
        multicore.run_cores([path], None, [*over, "frontend.mode=cores"], notify=False)
    with pytest.raises(ConfigError, match=rf"^{key}.* with the SimPy front door"):
        MemorySystem(simpy.Environment(), None, list(over), notify=False)


def test_simpy_with_sub_banks_or_cores_is_refused_naming_both():
    with pytest.raises(ConfigError, match=r"^dram.subbank_scheme: 'salp1' \(dram.subbanks_"
                                          r"per_bank 2\): .* with the SimPy front door"):
        MemorySystem(simpy.Environment(), None, list(SALP1), notify=False)
    with pytest.raises(ConfigError, match=r"^frontend.mode: 'cores' has its own front end; "
                                          r"a SimPy memory system"):
        MemorySystem(simpy.Environment(), None, ["frontend.mode=cores"], notify=False)


# ---------------------------------------------------------------- ranks and channels

CLASSES = {  # plain DDR4, one config per ECC class and per sub-bank scheme
    "ddr4": (),
    "write_crc": ("ecc.scheme=write_crc",),  # timing-only (as secded_x72, ca_parity, ...)
    "aiecc": ("ecc.scheme=aiecc",),
    "duo": ("ecc.scheme=duo",),  # half-cycle grid
    "inline": ("ecc.scheme=inline",),  # extra accesses
    "inline_separate": ("ecc.scheme=inline", "ecc.inline_layout=separate",
                        "ecc.inline_cache_entries=4"),
    # (every write partial: which are is a hash of the trace index, and the two-channel
    # trace numbers its requests apart)
    "partial_writes": ("ecc.scheme=secded_x72", "ecc.partial_write_fraction=1.0"),
    "lockstep": ("ecc.scheme=chipkill_x8_lockstep", "dram.channels=2"),  # (one channel)
    "salp1": SALP1,
    "salp2": ("dram.subbank_scheme=salp2", "dram.subbanks_per_bank=4"),
    "masa": ("dram.subbank_scheme=masa", "dram.subbanks_per_bank=4"),
    "eruca": ("dram.subbank_scheme=eruca", "dram.subbanks_per_bank=2",
              "controller.scheduler=eruca"),
}
N = 160
KEEP = ["cycle", "bankgroup", "bank", "row", "column", "command", "request"]


def fields(cfg_over, seed=7):
    """Bank groups, banks, rows, sub-banks and columns of N requests: a few rows of a
    few banks (hits and conflicts), columns in the part of a row every layout keeps
    for data, and which are writes."""
    rng = np.random.default_rng(seed)
    return dict(bankgroup=rng.integers(0, 2, N), bank=rng.integers(0, 2, N),
                row=rng.integers(0, 4, N), subbank=rng.integers(0, 2, N),
                column=rng.integers(0, 64, N) * 8), rng.random(N) < 0.3


def run(tmp_path, name, over, addr, is_write, cycle):
    path = tmp_path / f"{name}.csv"
    cfg = config.load(None, [*NO_REFRESH, *over])
    result = sim.run_arrays(addr, is_write, cycle, cfg, cmd_log=path, progress=False)
    assert violations(path, cfg) == []
    return result, read_log(path)


def same_commands(theirs: pd.DataFrame, mine: pd.DataFrame):
    cols = [c for c in KEEP + ["kind", "subbank"] if c in mine.columns]
    pd.testing.assert_frame_equal(theirs[cols].reset_index(drop=True),
                                  mine[cols].reset_index(drop=True))


@pytest.mark.parametrize("timed", [True, False], ids=["timestamped", "afap"])
@pytest.mark.parametrize("name", CLASSES)
def test_a_trace_on_one_rank_of_four_gets_the_one_rank_commands(tmp_path, name, timed):
    over = CLASSES[name]
    f, is_write = fields(over)
    cycle = np.arange(N, dtype=np.int64) * 9 if timed else None
    one = config.load(None, [*NO_REFRESH, *over])
    _, _, m1 = resolve(one)
    _, _, m4 = resolve(None, [*NO_REFRESH, *over, "dram.ranks=4"])
    r1, log1 = run(tmp_path, "r1", over, m1.encode(**f), is_write, cycle)
    r4, log4 = run(tmp_path, "r4", (*over, "dram.ranks=4"), m4.encode(rank=2, **f), is_write,
                   cycle)
    assert set(log4["rank"]) == {2}
    same_commands(log4, log1)
    assert r4.cycles == r1.cycles
    s1, s4 = r1.summary(), r4.summary()
    assert s4["latency_ns"] == s1["latency_ns"]
    assert s4["requests"] == s1["requests"]


@pytest.mark.parametrize("name", [n for n in CLASSES if n != "lockstep"])
def test_a_trace_on_each_of_two_channels_gets_the_one_channel_commands(tmp_path, name):
    over = CLASSES[name]
    f, is_write = fields(over, seed=11)
    cycle = np.arange(N, dtype=np.int64) * 9
    _, _, m1 = resolve(None, [*NO_REFRESH, *over])
    _, _, m2 = resolve(None, [*NO_REFRESH, *over, "dram.channels=2"])
    both = np.stack([m2.encode(channel=c, **f) for c in (0, 1)], axis=1).ravel()
    r1, log1 = run(tmp_path, "c1", over, m1.encode(**f), is_write, cycle)
    r2, log2 = run(tmp_path, "c2", (*over, "dram.channels=2"), both, np.repeat(is_write, 2),
                   np.repeat(cycle, 2))
    for c in (0, 1):
        mine = log2[log2["channel"] == c].copy()
        # requests are numbered over both channels: request i is 2i + c
        mine["request"] = np.where(mine["request"] >= 0, (mine["request"] - c) // 2, -1)
        same_commands(mine, log1)
    assert r2.cycles == r1.cycles
    assert r2.summary()["latency_ns"] == r1.summary()["latency_ns"]
