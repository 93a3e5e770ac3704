"""A sweep's points: the spec (YAML or dict) validated and expanded into resolved configs.

:func:`load_spec` reads a spec; :func:`resolve_points` resolves the points of a spec
or of ``memsim compare``'s arguments (each describes its points in its own words, so
that an error names what the user wrote); :func:`labels` names the points in tables
and figures.
"""

from __future__ import annotations

import copy
import dataclasses
import glob
import itertools
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsim import config as config_mod

SPEC_KEYS = ("name", "description", "base", "traces", "grid", "variants", "points",
             "overrides")
SCHEDULER_KEY = "controller.scheduler"
# Columns of the results table that name a point's base config (when a sweep compares
# several) and its named variant (when its variants are named): they label the points
# in place of the values those set.
TAG_BASE = "base"
TAG_VARIANT = "variant"
TAGS = (TAG_BASE, TAG_VARIANT)


class SpecError(config_mod.ConfigError):
    """A sweep spec is malformed; the message names the key (and point) at fault."""


@dataclass
class Draft:
    """A point before its config is resolved, in the words of whoever described it."""

    origin: str  # "grid point 3", "points[1]" (a spec's words)
    base: Any  # preset name, YAML path, inline mapping or None (the default preset)
    values: dict  # dotted key -> value: the point's own overrides
    tags: dict = field(default_factory=dict)  # TAG_BASE / TAG_VARIANT -> name
    # (how the user wrote it, the dotted keys it sets): the settings the point is made
    # of, for naming the one at fault in an error
    parts: list = field(default_factory=list)


@dataclass
class Point:
    """One configuration of the sweep: its own dotted overrides and the resolved config."""

    index: int
    origin: str  # "grid point 3" or "points[1]"
    values: dict  # dotted key -> value, as written in the spec
    config: dict  # fully resolved config (Config.to_dict())
    tags: dict = field(default_factory=dict)  # TAG_BASE / TAG_VARIANT -> name


@dataclass
class TraceRef:
    name: str  # as written in the spec (after glob expansion); part of the job key
    path: Path  # where the file is (or would be)
    # a multi-programmed workload (frontend.mode: cores): one trace per core; ``name``
    # joins theirs with "+" and ``path`` is the first
    parts: tuple = ()


@dataclass
class Sweep:
    """A validated sweep spec, expanded into points."""

    name: str
    base: Any  # the base config, or the list of them when the sweep compares several
    # the table's parameter columns: TAGS in use, then the dotted keys that points set
    # (grid keys first), but not those that only named variants set (their name stands
    # for them)
    params: list[str]
    overrides: dict
    points: list[Point]
    traces: list[TraceRef]
    spec: dict = field(default_factory=dict)


def describe(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "base config"


def canonical(obj) -> str:
    """A stable text of a JSON-like value (sorted keys): for hashing and comparing."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def check_key(key: Any, where: str, at: str | None = None) -> str:
    """A dotted config key (``controller.read_queue``) must name a config field. An
    error starts with ``at`` if given (the user's words for the key), else
    ``where.key`` (``grid.controller.read_queue``)."""
    if not isinstance(key, str) or not key:
        raise SpecError(f"{at or where}: keys must be dotted config keys such as "
                        f"controller.scheduler, got {key!r}")
    here = at if at is not None else f"{where}.{key}"
    parts = key.split(".")
    sections = {f.name: f for f in dataclasses.fields(config_mod.Config)}
    if parts[0] not in sections:
        raise SpecError(f"{here}: unknown config key ({parts[0]!r} is not a section; "
                        f"expected one of: {', '.join(sections)})")
    if parts[0] == "name":
        if len(parts) > 1:
            raise SpecError(f"{here}: unknown config key (name has no sub-keys)")
        return key
    if len(parts) == 1:
        raise SpecError(f"{here}: a whole section cannot be swept; use dotted keys "
                        f"such as {key}.<field>")
    fields = {f.name: f for f in dataclasses.fields(sections[parts[0]].default_factory)}
    if parts[1] not in fields:
        raise SpecError(f"{here}: unknown config key (expected one of: "
                        + ", ".join(f"{parts[0]}.{n}" for n in fields) + ")")
    if len(parts) > 2 and fields[parts[1]].type not in (dict, "dict"):
        raise SpecError(f"{here}: unknown config key ({parts[0]}.{parts[1]} has no "
                        f"sub-keys)")
    return key


def expand_grid(grid: dict) -> list[dict]:
    """Cartesian product of ``{key: [values]}``, first key varying slowest."""
    if not grid:
        return []
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def base_name(base, index: int) -> str:
    """How a base config is named in labels: a preset by its name, a file by its stem,
    an inline mapping by its ``name`` (else ``base[i]``)."""
    if isinstance(base, dict):
        return str(base.get("name") or f"base[{index}]")
    if base is None:
        return config_mod.DEFAULT_PRESET
    p = Path(str(base))
    return p.stem if p.suffix in (".yaml", ".yml") else str(base)


# ---------------------------------------------------------------------------- reading

def _read_spec(spec) -> tuple[dict, Path, str]:
    """(spec dict, directory that relative paths start from, name for messages)."""
    if isinstance(spec, dict):
        return dict(spec), Path.cwd(), "spec"
    path = Path(spec)
    data = config_mod.read_yaml(path, "sweep spec", SpecError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping with keys {', '.join(SPEC_KEYS)}")
    data.setdefault("name", path.stem)
    return data, path.resolve().parent, str(path)


def _resolve_base(base, base_dir: Path, where: str = "base"):
    """A preset name stays a name; a path is taken relative to the spec, then the CWD."""
    if base is None or isinstance(base, dict):
        return base
    if not isinstance(base, str):
        raise SpecError(f"{where}: expected a preset name or a YAML path, got {base!r}")
    p = Path(base).expanduser()
    looks_like_path = p.suffix in (".yaml", ".yml") or "/" in base or os.sep in base
    if not looks_like_path:
        return base
    if p.is_absolute():
        return str(p)
    for cand in (base_dir / p, Path.cwd() / p):
        if cand.exists():
            return str(cand)
    raise SpecError(f"{where}: config file {base!r} not found (looked in {base_dir} and "
                    f"{Path.cwd()})")


def _resolve_bases(base, base_dir: Path) -> list:
    """``base``: one config, or a non-empty list of them (compared side by side)."""
    if not isinstance(base, list):
        return [_resolve_base(base, base_dir)]
    if not base:
        raise SpecError("base: expected a config or a non-empty list of configs, got []")
    bases = [_resolve_base(b, base_dir, f"base[{i}]") for i, b in enumerate(base)]
    names = [base_name(b, i) for i, b in enumerate(bases)]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError(f"base: listed more than once: {', '.join(dup)}")
    return bases


def _resolve_traces(traces, base_dir: Path) -> list[TraceRef]:
    if traces is None:
        raise SpecError("traces: required (a trace path or a list of them)")
    if isinstance(traces, str):
        traces = [traces]
    if not isinstance(traces, list) or not traces:
        raise SpecError(f"traces: expected a path or a non-empty list of paths, got {traces!r}")
    refs: list[TraceRef] = []
    for i, t in enumerate(traces):
        if isinstance(t, list):
            # a workload: one trace per core
            if not t:
                raise SpecError(f"traces[{i}]: a workload needs one trace per core, got "
                                f"an empty list")
            parts = []
            for k, one in enumerate(t):
                if not isinstance(one, str) or not one or glob.has_magic(one):
                    raise SpecError(f"traces[{i}][{k}]: expected a path (no glob), got "
                                    f"{one!r}")
                parts.append(_resolve_traces([one], base_dir)[0])
            refs.append(TraceRef("+".join(r.name for r in parts), parts[0].path,
                                 tuple(r.path for r in parts)))
            continue
        if not isinstance(t, str) or not t:
            raise SpecError(f"traces[{i}]: expected a path, got {t!r}")
        if glob.has_magic(t):
            roots = [] if Path(t).is_absolute() else [base_dir, Path.cwd()]
            matches: list[TraceRef] = []
            for root in roots or [Path("/")]:
                hits = sorted(glob.glob(t, root_dir=root))
                if hits:
                    matches = [TraceRef(h, (root / h)) for h in hits]
                    break
            if not matches:
                raise SpecError(f"traces[{i}]: {t!r} matches no file")
            refs.extend(matches)
            continue
        p = Path(t).expanduser()
        path = p
        if not p.is_absolute():
            path = base_dir / p
            if not path.exists() and (Path.cwd() / p).exists():
                path = Path.cwd() / p
        # checked before anything runs: a missing trace would fail every one of its runs
        if not path.exists():
            where = (f"looked in {base_dir} and {Path.cwd()}" if not p.is_absolute()
                     else "no such file")
            raise SpecError(f"traces[{i}]: {t!r} not found ({where})")
        if not path.is_file():
            raise SpecError(f"traces[{i}]: {t!r} is not a regular file")
        refs.append(TraceRef(t, path))
    names = [r.name for r in refs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError(f"traces: listed more than once: {', '.join(dup)}")
    return refs


def _mapping_of_overrides(data, where: str) -> dict:
    """``overrides`` may be a mapping of dotted keys or a list of ``key=value`` strings."""
    if data is None:
        return {}
    if isinstance(data, list):
        out = {}
        for i, item in enumerate(data):
            if not isinstance(item, str):
                raise SpecError(f"{where}[{i}]: expected 'key=value', got {item!r}")
            try:
                k, v = config_mod.parse_override(item)
            except config_mod.ConfigError as e:
                raise SpecError(f"{where}[{i}]: {e}") from None
            out[k] = v
        data = out
    if not isinstance(data, dict):
        raise SpecError(f"{where}: expected a mapping of dotted config keys to values, "
                        f"got {data!r}")
    for k in data:
        check_key(k, where)
    return dict(data)


def _check_grid(grid, overrides: dict) -> dict:
    if not isinstance(grid, dict):
        raise SpecError(f"grid: expected a mapping of dotted config keys to lists of values, "
                        f"got {grid!r}")
    for k, v in grid.items():
        check_key(k, "grid")
        if isinstance(v, dict):
            raise SpecError(f"grid.{k}: expected a list of values, got a mapping (use dotted "
                            f"keys, e.g. grid: {{{k}.<field>: [a, b]}})")
        if not isinstance(v, list):
            raise SpecError(f"grid.{k}: expected a list of values, got {v!r}")
        if not v:
            raise SpecError(f"grid.{k}: the list of values is empty")
        if k in overrides:
            raise SpecError(f"grid.{k}: also set in overrides; set it in one place")
    return grid


def _check_variants(variants, grid: dict) -> list[tuple[str | None, dict]]:
    """``variants``: a list of mappings (unnamed), or a mapping of names to mappings
    (named: the name labels the point; an empty mapping is the base config as is).
    Returns [(name or None, values)]."""
    if variants is None:
        return []
    if isinstance(variants, dict) and variants:
        items = []
        for name, v in variants.items():
            if v is None:
                v = {}
            if not isinstance(v, dict):
                raise SpecError(f"variants.{name}: expected a mapping of dotted config keys "
                                f"to values ({{}} for the base config as is), got {v!r}")
            items.append((str(name), v, f"variants.{name}"))
    elif isinstance(variants, list) and variants:
        items = []
        for i, v in enumerate(variants):
            if not isinstance(v, dict) or not v:
                raise SpecError(f"variants[{i}]: expected a non-empty mapping of dotted "
                                f"config keys to values, got {v!r}")
            items.append((None, v, f"variants[{i}]"))
    else:
        raise SpecError(f"variants: expected a non-empty list of mappings of dotted keys, "
                        f"or a mapping of names to such mappings, got {variants!r}")
    for _, v, where in items:
        for k in v:
            check_key(k, where)
            if k in grid:
                raise SpecError(f"{where}.{k}: also a grid key; set it in one place")
    return [(name, dict(v)) for name, v, _ in items]


def load_spec(spec) -> Sweep:
    """Read and validate a sweep spec (YAML path or dict) and resolve every point's
    config. Raises :class:`SpecError` naming the key and, for config values, the point.
    A :class:`Sweep` is returned as it is (already validated)."""
    if isinstance(spec, Sweep):
        return spec
    data, base_dir, src = _read_spec(spec)
    unknown = [k for k in data if k not in SPEC_KEYS]
    if unknown:
        raise SpecError(f"{src}: unknown key {unknown[0]!r} (expected one of: "
                        f"{', '.join(SPEC_KEYS)})")
    bases = _resolve_bases(data.get("base"), base_dir)
    traces = _resolve_traces(data.get("traces"), base_dir)
    overrides = _mapping_of_overrides(data.get("overrides"), "overrides")
    grid = _check_grid(data.get("grid") or {}, overrides)
    variants = _check_variants(data.get("variants"), grid)
    extra = data.get("points") or []
    if not isinstance(extra, list):
        raise SpecError(f"points: expected a list of mappings of dotted keys, got {extra!r}")
    for i, p in enumerate(extra):
        if not isinstance(p, dict) or not p:
            raise SpecError(f"points[{i}]: expected a non-empty mapping of dotted config keys "
                            f"to values, got {p!r}")
        for k in p:
            check_key(k, f"points[{i}]")

    several = len(bases) > 1
    grid_points = expand_grid(grid) if grid or not variants else [{}]
    drafts: list[Draft] = []
    for bi, base in enumerate(bases):
        at = f"base[{bi}] " if several else ""
        tags = {TAG_BASE: base_name(base, bi)} if several else {}
        for i, p in enumerate(grid_points):
            for j, (name, v) in enumerate(variants or [(None, {})]):
                if not variants:
                    origin = f"grid point {i}"
                elif grid:
                    origin = f"grid point {i} variant {name if name is not None else j}"
                else:
                    origin = f"variants.{name}" if name is not None else f"variants[{j}]"
                drafts.append(Draft(at + origin, base, {**p, **v},
                                    {**tags, **({TAG_VARIANT: name} if name else {})}))
        for i, p in enumerate(extra):
            drafts.append(Draft(f"{at}points[{i}]", base, dict(p), dict(tags)))
        if not grid and not variants and not extra:
            drafts.append(Draft(f"{at}base config".strip(), base, {}, dict(tags)))

    named = {k for name, v in variants if name is not None for k in v}
    params = [t for t in TAGS if any(t in d.tags for d in drafts)] + list(grid)
    for _, v in variants:
        params.extend(k for k in v if k not in params and k not in named)
    for p in extra:
        params.extend(k for k in p if k not in params)

    def explain(d: Draft, message: str) -> str:
        return f"{d.origin} ({describe(d.values)}): {message}"

    points, errors = resolve_points(drafts, overrides, explain, "memsim sweep")
    if errors:
        more = f"\n  ... and {len(errors) - 10} more" if len(errors) > 10 else ""
        raise SpecError(f"{src}: {len(errors)} of {len(drafts)} points have an invalid "
                        f"config:\n  " + "\n  ".join(errors[:10]) + more)
    return Sweep(name=str(data.get("name", "sweep")),
                 base=bases if several else bases[0], params=params,
                 overrides=overrides, points=points, traces=traces, spec=data)


def resolve_points(drafts: list[Draft], overrides: dict,
                   explain: Callable[[Draft, str], str],
                   command: str) -> tuple[list[Point], list[str]]:
    """Resolve every draft's config (base, then ``overrides``, then its values) before
    anything runs. Returns (points, errors): every bad draft is reported, each message
    by ``explain(draft, config error)``, each once. Two drafts that resolve to the same
    configuration make one point (a note on stderr, from ``command``, says so)."""
    points: list[Point] = []
    errors: list[str] = []
    seen: dict[str, str] = {}
    for d in drafts:
        items = list(overrides.items()) + list(d.values.items())
        try:
            cfg = config_mod.load(copy.deepcopy(d.base), items).to_dict()
        except config_mod.ConfigError as e:
            message = explain(d, str(e))
            if message not in errors:
                errors.append(message)
            continue
        blob = canonical(cfg)
        if blob in seen:
            print(f"{command}: {d.origin} ({describe(d.values)}) is the same configuration "
                  f"as {seen[blob]}; running it once", file=sys.stderr)
            continue
        seen[blob] = d.origin
        points.append(Point(len(points), d.origin, d.values, cfg, dict(d.tags)))
    return points, errors


# ---------------------------------------------------------------------------- labels

def get(d: dict, dotted: str):
    """The value at a dotted key of a nested dict, or None."""
    node = d
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def param_value(point: Point, key: str):
    """A point's value of a parameter column: a tag, or a dotted key of its config."""
    return point.tags.get(key) if key in TAGS else get(point.config, key)


def format_value(key: str, value) -> str:
    """How a parameter value appears in a configuration label: strings bare
    (``frfcfs``, ``DDR4_3200AA``), numbers and flags with their name (``read_queue=64``)."""
    if isinstance(value, str):
        return value
    short = key.rsplit(".", 1)[-1]
    if isinstance(value, float):
        return f"{short}={value:g}"
    return f"{short}={value}"


def labels(points: list[Point], params: list[str]) -> dict[int, str]:
    """Label of each point from the parameters that differ between points: the base
    config and named variant first, then the scheduler, then the rest."""
    varying = [k for k in params
               if len({canonical(param_value(p, k)) for p in points}) > 1]
    varying.sort(key=lambda k: (k not in TAGS, k != SCHEDULER_KEY))
    out = {}
    for p in points:
        parts = [format_value(k, param_value(p, k)) for k in varying]
        out[p.index] = ", ".join(parts) if parts else (p.config.get("name") or "base")
    return out
