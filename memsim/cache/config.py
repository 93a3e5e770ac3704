"""The ``caches`` description: which levels a hierarchy has, their geometry and their
policies, from a preset, a YAML file or a dict, with ``key=value`` overrides.

A description maps level names to their keys (``l1d`` required; ``l1i``, ``l2`` and
``llc`` optional; ``null`` or ``none`` leaves a level out); a YAML file may put it
under a top-level ``caches:`` key. Keys of every level: ``size_bytes`` (an integer or
``32KiB``-style text), ``ways``, ``line_bytes``, ``hit_latency_cycles`` (core cycles)
and ``replacement`` (``lru`` or ``srrip``); the ``llc`` also has ``inclusive``, the
``l2`` its prefetcher: ``prefetcher`` (``none``, ``next_line``, ``stride``),
``prefetch_degree`` and ``prefetch_table_entries``. An unknown key, a missing one or a
bad value raises :class:`~memsim.errors.ConfigError` naming the key path and the
value, as memsim's config does (``caches.l2.ways: 0 is below the minimum 1``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memsim.cache.layout import MAX_ACCESS_BYTES, POLICIES, PREFETCHERS
from memsim.errors import ConfigError

LEVELS = ("l1d", "l1i", "l2", "llc")
# hit latencies (core cycles) of a level that does not give one
DEFAULT_LATENCY_CYCLES = {"l1d": 4, "l1i": 4, "l2": 12, "llc": 42}
MAX_SIZE_BYTES = 1 << 30
MAX_WAYS = 64
MAX_PREFETCH_DEGREE = 16
MAX_PREFETCH_TABLE = 4096

# Presets. "default": one core's share of a recent desktop processor's hierarchy (as in
# Intel's Skylake client parts: 32 KiB 8-way L1D, 256 KiB 4-way L2, 2 MiB of a 16-way
# inclusive LLC per core), with LRU above an SRRIP LLC (Jaleel et al., ISCA 2010) and
# no prefetcher.
PRESETS: dict[str, dict] = {
    "default": {
        "l1d": {"size_bytes": "32KiB", "ways": 8, "line_bytes": 64,
                "hit_latency_cycles": 4, "replacement": "lru"},
        "l2": {"size_bytes": "256KiB", "ways": 4, "line_bytes": 64,
               "hit_latency_cycles": 12, "replacement": "lru", "prefetcher": "none"},
        "llc": {"size_bytes": "2MiB", "ways": 16, "line_bytes": 64,
                "hit_latency_cycles": 42, "replacement": "srrip", "inclusive": True},
    },
}
DEFAULT_PRESET = "default"


@dataclass(frozen=True)
class CacheLevel:
    """One level's geometry and policies (``inclusive``: the LLC's; ``prefetch*``: the
    L2's)."""

    size_bytes: int
    ways: int
    line_bytes: int = 64
    hit_latency_cycles: int = 4
    replacement: str = "lru"
    inclusive: bool = False
    prefetcher: str = "none"
    prefetch_degree: int = 1
    prefetch_table_entries: int = 64

    @property
    def sets(self) -> int:
        return self.size_bytes // (self.ways * self.line_bytes)


COMMON_KEYS = ("size_bytes", "ways", "line_bytes", "hit_latency_cycles", "replacement")
LEVEL_KEYS = {"l1d": COMMON_KEYS, "l1i": COMMON_KEYS,
              "l2": COMMON_KEYS + ("prefetcher", "prefetch_degree", "prefetch_table_entries"),
              "llc": COMMON_KEYS + ("inclusive",)}
REQUIRED_KEYS = ("size_bytes", "ways")


@dataclass(frozen=True)
class CachesConfig:
    """A hierarchy: an L1D per core, optionally an L1I and an L2 per core, optionally a
    shared LLC."""

    l1d: CacheLevel
    l1i: CacheLevel | None = None
    l2: CacheLevel | None = None
    llc: CacheLevel | None = None

    @property
    def line_bytes(self) -> int:
        return self.l1d.line_bytes

    def levels(self) -> dict[str, CacheLevel]:
        """The levels present, top down."""
        return {name: getattr(self, name) for name in LEVELS if getattr(self, name)}

    def to_dict(self) -> dict:
        """The description, every key resolved (loads back to the same config)."""
        out: dict[str, Any] = {}
        for name in LEVELS:
            level = getattr(self, name)
            out[name] = None if level is None else {
                key: getattr(level, key) for key in LEVEL_KEYS[name]}
        return out


_SIZE = re.compile(r"\s*(\d+)\s*([KMG]i?B|B)?\s*", re.IGNORECASE)
_UNITS = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
          "kb": 10**3, "mb": 10**6, "gb": 10**9}


def parse_size(value: Any, path: str) -> int:
    """A byte count: an integer, or text such as ``32KiB``, ``2MiB`` or ``1GB``."""
    if isinstance(value, bool):
        raise ConfigError(f"{path}: expected a size in bytes, got {value!r}")
    if isinstance(value, int):
        return value
    match = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ConfigError(f"{path}: {value!r} is not a size (expected bytes as an integer "
                          f"or with a unit: B, KiB, MiB, GiB, KB, MB, GB; e.g. 32KiB)")
    return int(match.group(1)) * _UNITS[(match.group(2) or "b").lower()]


def _integer(value: Any, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{path}: expected an integer, got {value!r}")
    if value < low:
        raise ConfigError(f"{path}: {value} is below the minimum {low}")
    if value > high:
        raise ConfigError(f"{path}: {value} is above the maximum {high}")
    return value


def _choice(value: Any, path: str, options: Iterable[str]) -> str:
    options = tuple(options)
    if value not in options:
        raise ConfigError(f"{path}: {value!r} is not one of: {', '.join(options)}")
    return value


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _level(name: str, data: Any) -> CacheLevel:
    path = f"caches.{name}"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping of keys ({', '.join(LEVEL_KEYS[name])})"
                          f" or none, got {data!r}")
    allowed = LEVEL_KEYS[name]
    for key in data:
        if key in allowed:
            continue
        if key == "inclusive":
            raise ConfigError(f"{path}.{key}: only the llc is inclusive or not")
        if key in LEVEL_KEYS["l2"]:
            raise ConfigError(f"{path}.{key}: the prefetcher sits at the l2 only")
        raise ConfigError(f"{path}.{key}: unknown key (expected one of: {', '.join(allowed)})")
    for key in REQUIRED_KEYS:
        if key not in data:
            raise ConfigError(f"{path}.{key}: missing (every level needs "
                              f"{' and '.join(REQUIRED_KEYS)})")
    size = parse_size(data["size_bytes"], f"{path}.size_bytes")
    _integer(size, f"{path}.size_bytes", 1, MAX_SIZE_BYTES)
    ways = _integer(data["ways"], f"{path}.ways", 1, MAX_WAYS)
    line = _integer(data.get("line_bytes", 64), f"{path}.line_bytes", 16, MAX_ACCESS_BYTES)
    if not _power_of_two(line):
        raise ConfigError(f"{path}.line_bytes: {line} is not a power of two")
    if size % (ways * line):
        raise ConfigError(f"{path}.size_bytes: {size} B is not a whole number of sets of "
                          f"ways x line_bytes = {ways} x {line} = {ways * line} B")
    sets = size // (ways * line)
    if not _power_of_two(sets):
        raise ConfigError(f"{path}.size_bytes: {size} B makes {sets} sets of {ways} x "
                          f"{line} B, not a power of two (sets are chosen by address bits)")
    fields = dict(size_bytes=size, ways=ways, line_bytes=line)
    fields["hit_latency_cycles"] = _integer(
        data.get("hit_latency_cycles", DEFAULT_LATENCY_CYCLES[name]),
        f"{path}.hit_latency_cycles", 0, 1 << 20)
    fields["replacement"] = _choice(data.get("replacement", "lru"), f"{path}.replacement",
                                    POLICIES)
    if "inclusive" in data:
        if not isinstance(data["inclusive"], bool):
            raise ConfigError(f"{path}.inclusive: expected true or false, got "
                              f"{data['inclusive']!r}")
        fields["inclusive"] = data["inclusive"]
    if name == "l2":
        fields["prefetcher"] = _choice(data.get("prefetcher", "none"), f"{path}.prefetcher",
                                       PREFETCHERS)
        fields["prefetch_degree"] = _integer(data.get("prefetch_degree", 1),
                                             f"{path}.prefetch_degree", 1,
                                             MAX_PREFETCH_DEGREE)
        fields["prefetch_table_entries"] = _integer(
            data.get("prefetch_table_entries", 64), f"{path}.prefetch_table_entries", 1,
            MAX_PREFETCH_TABLE)
    return CacheLevel(**fields)


def _absent(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.lower() == "none")


def from_dict(data: Any) -> CachesConfig:
    """A validated hierarchy from its description (a mapping of level names)."""
    if isinstance(data, Mapping) and set(data) == {"caches"}:
        data = data["caches"]
    if not isinstance(data, Mapping):
        raise ConfigError(f"caches: expected a mapping of levels ({', '.join(LEVELS)}), "
                          f"got {data!r}")
    for name in data:
        if name not in LEVELS:
            raise ConfigError(f"caches.{name}: unknown level (expected one of: "
                              f"{', '.join(LEVELS)})")
    if _absent(data.get("l1d")):
        raise ConfigError("caches.l1d: missing; every hierarchy has an L1 data cache")
    levels = {name: _level(name, data[name]) for name in LEVELS
              if name in data and not _absent(data[name])}
    line = levels["l1d"].line_bytes
    for name, level in levels.items():
        if level.line_bytes != line:
            raise ConfigError(f"caches.{name}.line_bytes: {level.line_bytes} differs from "
                              f"caches.l1d.line_bytes ({line}); the levels share one line "
                              "size")
    return CachesConfig(**levels)


def _read_source(source: str) -> dict:
    if source in PRESETS:
        return _copy(PRESETS[source])
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"caches: {source!r} is neither a preset ({', '.join(PRESETS)}) "
                          "nor a YAML file")
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"caches: {source}: cannot read the file ({exc})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"caches: {source}: not valid YAML ({exc})") from None
    if isinstance(data, Mapping) and set(data) == {"caches"}:
        data = data["caches"]
    if not isinstance(data, Mapping):
        raise ConfigError(f"caches: {source}: expected a mapping of levels "
                          f"({', '.join(LEVELS)}), got {data!r}")
    return _copy(data)


def _copy(data: Mapping) -> dict:
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in data.items()}


def _apply(data: dict, override: str | tuple) -> None:
    """Apply ``level.key=value`` (or ``level=none``, ``level={...}``) to ``data``."""
    if isinstance(override, tuple):
        key, value = override
    else:
        if "=" not in override:
            raise ConfigError(f"caches override {override!r}: expected LEVEL.KEY=VALUE, "
                              "e.g. l2.size_bytes=1MiB")
        key, text = override.split("=", 1)
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
    key = key.strip()
    name, _, field = key.partition(".")
    if name not in LEVELS:
        raise ConfigError(f"caches.{name}: unknown level (expected one of: "
                          f"{', '.join(LEVELS)})")
    if not field:
        data[name] = dict(value) if isinstance(value, Mapping) else value
        return
    level = data.get(name)
    if _absent(level):
        level = data[name] = {}
    if not isinstance(level, dict):
        raise ConfigError(f"caches.{name}: expected a mapping of keys, got {level!r}")
    level[field] = value


def load_caches(source: str | Mapping | CachesConfig | None = None,
                overrides: Iterable[str | tuple] = ()) -> CachesConfig:
    """A hierarchy from a preset name or YAML file (``source``; default
    ``DEFAULT_PRESET``), a mapping, or a CachesConfig, with ``level.key=value``
    overrides applied in order."""
    if isinstance(source, CachesConfig):
        data = _copy(source.to_dict())
    elif isinstance(source, Mapping):
        data = _copy(source["caches"] if set(source) == {"caches"} else source)
    else:
        data = _read_source(source or DEFAULT_PRESET)
    for override in overrides:
        _apply(data, override)
    return from_dict(data)


def describe(caches: CachesConfig) -> str:
    """One line per level: ``l1d  32 KiB, 8-way, 64 B lines, 4 cycles, lru``."""
    lines = []
    for name, level in caches.levels().items():
        extra = ""
        if name == "llc":
            extra = ", inclusive" if level.inclusive else ", non-inclusive"
        if name == "l2" and level.prefetcher != "none":
            extra = (f", {level.prefetcher} prefetcher (degree {level.prefetch_degree}"
                     + (f", {level.prefetch_table_entries} entries"
                        if level.prefetcher == "stride" else "") + ")")
        lines.append(f"{name:<4} {_bytes(level.size_bytes)}, {level.ways}-way, "
                     f"{level.line_bytes} B lines, {level.hit_latency_cycles} cycles, "
                     f"{level.replacement}{extra}")
    return "\n".join(lines)


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


__all__ = ["CacheLevel", "CachesConfig", "ConfigError", "DEFAULT_PRESET", "LEVELS",
           "PRESETS", "describe", "from_dict", "load_caches", "parse_size"]
