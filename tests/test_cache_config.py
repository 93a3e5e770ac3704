"""The ``caches`` description: presets, YAML files, overrides, and errors that name the
key path and the value."""

from __future__ import annotations

import pytest

from memsim.cache.config import PRESETS, describe, load_caches
from memsim.errors import ConfigError


def test_the_default_preset_resolves_to_its_levels():
    caches = load_caches()
    assert (caches.l1d.size_bytes, caches.l1d.ways, caches.l1d.sets) == (32768, 8, 64)
    assert (caches.l2.size_bytes, caches.l2.ways, caches.l2.sets) == (262144, 4, 1024)
    assert (caches.llc.size_bytes, caches.llc.ways, caches.llc.sets) == (2 << 20, 16, 2048)
    assert caches.llc.inclusive and caches.llc.replacement == "srrip"
    assert caches.l1i is None
    assert describe(caches).splitlines() == [
        "l1d  32 KiB, 8-way, 64 B lines, 4 cycles, lru",
        "l2   256 KiB, 4-way, 64 B lines, 12 cycles, lru",
        "llc  2 MiB, 16-way, 64 B lines, 42 cycles, srrip, inclusive"]


def test_a_resolved_description_loads_back_to_itself():
    caches = load_caches(None, ["l2.prefetcher=stride", "l1i={size_bytes: 32KiB, ways: 8}"])
    assert load_caches(caches.to_dict()) == caches
    assert load_caches({"caches": caches.to_dict()}) == caches


def test_overrides_change_add_and_remove_levels():
    caches = load_caches("default", ["l2.size_bytes=1MiB", "l2.ways=16", "llc=none",
                                      "llc.size_bytes=4MiB", "llc.ways=16"])
    assert caches.l2.size_bytes == 1 << 20 and caches.l2.ways == 16
    # llc=none removed it; the next two keys make a new one with the defaults
    assert caches.llc.size_bytes == 4 << 20 and not caches.llc.inclusive
    assert caches.llc.hit_latency_cycles == 42
    assert load_caches(None, ["l2=none"]).l2 is None


def test_a_yaml_file_may_wrap_its_levels_in_caches(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("caches:\n  l1d: {size_bytes: 16KiB, ways: 4, hit_latency_cycles: 3}\n")
    caches = load_caches(str(path))
    assert caches.l1d.sets == 64 and caches.l1d.hit_latency_cycles == 3
    assert caches.l2 is None and caches.llc is None


@pytest.mark.parametrize("overrides, message", [
    (["l2.ways=0"], "caches.l2.ways: 0 is below the minimum 1"),
    (["l2.ways=two"], "caches.l2.ways: expected an integer, got 'two'"),
    (["l2.size=1MiB"], "caches.l2.size: unknown key (expected one of: size_bytes, ways, "
                       "line_bytes, hit_latency_cycles, replacement, prefetcher, "
                       "prefetch_degree, prefetch_table_entries)"),
    (["l3.ways=4"], "caches.l3: unknown level (expected one of: l1d, l1i, l2, llc)"),
    (["l1d=none"], "caches.l1d: missing; every hierarchy has an L1 data cache"),
    (["l1d.size_bytes=3000"], "caches.l1d.size_bytes: 3000 B is not a whole number of sets "
                              "of ways x line_bytes = 8 x 64 = 512 B"),
    (["l1d.size_bytes=24KiB"], "caches.l1d.size_bytes: 24576 B makes 48 sets of 8 x 64 B, "
                               "not a power of two"),
    (["l1d.size_bytes=32 furlongs"], "caches.l1d.size_bytes: '32 furlongs' is not a size"),
    (["l2.line_bytes=128"], "caches.l2.line_bytes: 128 differs from caches.l1d.line_bytes "
                            "(64); the levels share one line size"),
    (["l1d.line_bytes=48"], "caches.l1d.line_bytes: 48 is not a power of two"),
    (["llc.replacement=plru"], "caches.llc.replacement: 'plru' is not one of: lru, srrip"),
    (["l2.prefetcher=markov"], "caches.l2.prefetcher: 'markov' is not one of: none, "
                               "next_line, stride"),
    (["l1d.inclusive=true"], "caches.l1d.inclusive: only the llc is inclusive or not"),
    (["llc.prefetcher=stride"], "caches.llc.prefetcher: the prefetcher sits at the l2 only"),
    (["llc.inclusive=maybe"], "caches.llc.inclusive: expected true or false, got 'maybe'"),
    (["l1i.size_bytes=32KiB"], "caches.l1i.ways: missing (every level needs size_bytes "
                               "and ways)"),
    (["l2.prefetch_degree=99"], "caches.l2.prefetch_degree: 99 is above the maximum 16"),
    (["l2"], "caches override 'l2': expected LEVEL.KEY=VALUE, e.g. l2.size_bytes=1MiB"),
])
def test_bad_keys_and_values_name_their_path_and_value(overrides, message):
    with pytest.raises(ConfigError) as err:
        load_caches(None, overrides)
    assert str(err.value).startswith(message)


def test_a_source_that_is_neither_preset_nor_file_says_so(tmp_path):
    with pytest.raises(ConfigError, match=r"caches: 'skylake' is neither a preset \(default\) "
                                          "nor a YAML file"):
        load_caches("skylake")
    bad = tmp_path / "bad.yaml"
    bad.write_text("l1d: [1, 2\n")
    with pytest.raises(ConfigError, match=f"caches: {bad}: not valid YAML"):
        load_caches(str(bad))


def test_presets_are_valid():
    for name in PRESETS:
        load_caches(name)
