"""MkDocs hook: the reference pages generated from the code at build time.

- ``reference/cli.md``: every command and option of ``memsim``, from the parser
  (``memsim.cli.build_parser()``), so a renamed option changes the page, not a reader's
  afternoon.
- ``reference/config.md``: every config key with its default, allowed values, unit and
  the mechanism that uses it, from the config schema (:func:`config_keys`).

The pages exist only in the built site (they are not files in ``docs/``). The hook
imports memsim from the checkout it lives in, not from an installed copy.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CLI_PAGE = "reference/cli.md"
CONFIG_PAGE = "reference/config.md"


def on_files(files, config):
    files.append(File.generated(config, CLI_PAGE, content=cli_page()))
    files.append(File.generated(config, CONFIG_PAGE, content=config_page()))
    return files


# --- the command line ------------------------------------------------------------------


def _repo_relative(text: str) -> str:
    """Help texts name the model reference by its absolute path when memsim runs from a
    checkout (memsim.reference); the page names it by its path in the repository."""
    return text.replace(str(ROOT) + "/", "")


def _cell(text) -> str:
    return _repo_relative(str(text)).replace("|", "\\|").replace("\n", " ")


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(f"`{s}`" for s in action.option_strings)
            if action.nargs != 0:
                name += f" `{action.metavar or action.dest.upper()}`"
        else:
            name = f"`{action.metavar or action.dest}`"
        default = action.default
        shown_default = ("" if default in (None, False, [], argparse.SUPPRESS)
                         or action.nargs == 0 else f"`{default}`")
        choices = (", ".join(f"`{c}`" for c in action.choices)
                   if action.choices and not isinstance(action.choices, dict) else "")
        rows.append(f"| {name} | {_cell(action.help or '')} | {shown_default} | {choices} |")
    return rows


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command words, parser, one-line help) for every command, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name, "")
                yield from _commands(sub, (*path, name))


def cli_page() -> str:
    from memsim.cli import build_parser

    parser = build_parser()
    out = ["# Command line",
           "",
           "Every `memsim` command and option, generated from the command's parser "
           "(`memsim.cli.build_parser()`) when this site is built. `memsim COMMAND --help` "
           "prints the same. `memsim` and `python -m memsim` are the same command.",
           "",
           "Exit status: 0 on success, 1 when a check finds protocol violations, 2 on bad "
           "input (config, trace, arguments: one `memsim: error: ...` line names the file, "
           "line or key at fault), 130 on Ctrl-C and 143 on SIGTERM.",
           "",
           "```text", _repo_relative(parser.format_usage()).strip(), "```", "",
           "| argument | meaning | default | choices |", "|---|---|---|---|",
           *_option_rows(parser), ""]
    for words, sub, one_line in _commands(parser):
        has_subcommands = any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)
        out += [f"## memsim {' '.join(words)}", ""]
        if one_line:
            out += [_repo_relative(one_line[0].upper() + one_line[1:]) + ".", ""]
        if sub.description:
            out += [_repo_relative(sub.description), ""]
        out += ["```text", _repo_relative(sub.format_usage()).strip(), "```", ""]
        rows = _option_rows(sub)
        if rows:
            out += ["| argument | meaning | default | choices |", "|---|---|---|---|", *rows,
                    ""]
        if sub.epilog and not has_subcommands:
            out += [_repo_relative(sub.epilog), ""]
    return "\n".join(out)


# --- config keys -----------------------------------------------------------------------

# What each section is for and when its keys may be set (the config's rules,
# memsim/config.py: keys of a mechanism that is off are errors naming the key).
SECTION_USERS = {
    "dram": "every run",
    "controller": "every run",
    "mapping": "every run",
    "frontend": "every run",
    "core": "`frontend.mode: cores` only",
    "ecc": "every run (`ecc.scheme`); the other keys only with a scheme that uses them",
    "nda": "`nda.enabled: true` only",
    "eruca": "`dram.subbank_scheme: eruca` only",
}
# Keys of a section used only in one situation (memsim/config.py, memsim/ecc.py).
KEY_USERS = {
    "frontend.cores": "`frontend.mode: cores`",
    "frontend.translation": "`frontend.mode: cores`",
    "frontend.page_seed": "`frontend.mode: cores`",
    "controller.row_hit_cap": "`controller.scheduler: frfcfs_cap`",
    "controller.page_timeout_cycles": "`controller.page_policy: timeout`",
    "frontend.max_outstanding": "`frontend.mode: afap` (and `auto` on untimed traces)",
    "dram.subbank_scheme": "`dram.subbanks_per_bank` > 1",
    "mapping.row_permutation": "sub-banks",
    "nda.host_banks": "`nda.layout: bank_partition`",
    "nda.host_slice_cycles": "`nda.policy: time_slice`",
    "nda.nda_slice_cycles": "`nda.policy: time_slice`",
    "nda.row_hit_cap": "`nda.policy: row_hit_cap`",
    "nda.packet_latency_cycles": "`nda.interface: packetized`",
    "nda.predictor": "`nda.next_rank_prediction: true`",
    "nda.vector_bytes": "kernels COPY, SCAL, AXPY, DOT",
    "nda.matrix_rows": "kernel GEMV",
    "nda.matrix_cols": "kernel GEMV",
    "nda.embedding_rows": "kernel GATHER_REDUCE",
    "nda.embedding_bytes": "kernel GATHER_REDUCE",
    "nda.lookups": "kernel GATHER_REDUCE",
    "nda.pooling": "kernel GATHER_REDUCE",
}
# What a key means, for the keys whose field in memsim/config.py has no comment above it
# (the schema's own descriptions, memsim.config.describe_keys(), will replace these).
DESCRIPTIONS = {
    "dram.standard": "DRAM standard: DDR4 or DDR5 (docs/reference/ddr4.md, ddr5.md)",
    "dram.speed": "speed bin (data rate and timing set); it must belong to dram.standard",
    "dram.org": "device width (x4, x8, x16): sets bank groups, columns and chips per rank",
    "dram.density_gbit": "device density, which sets the rows per bank and tRFC",
    "dram.channels": "independent channels (DDR5: sub-channels, two per DIMM)",
    "dram.ranks": "ranks per channel",
    "dram.subbank_scheme": "what sibling sub-banks may overlap: salp1, salp2, masa, eruca "
                           "(docs/reference/subbanks.md)",
    "dram.refresh": "refresh on (false: no refresh, for closed-form studies)",
    "controller.scheduler": "the command scheduler; eruca needs dram.subbank_scheme: eruca",
    "controller.page_policy": "open (rows stay open), closed (auto-precharge with the last "
                              "queued hit) or timeout (precharge rows idle "
                              "page_timeout_cycles)",
    "controller.read_queue": "read queue entries per channel",
    "controller.write_queue": "write queue entries per channel",
    "controller.write_low_watermark": "leave write mode at or below this fraction of "
                                      "write_queue (when reads wait)",
    "frontend.max_outstanding": "requests in flight when replaying as fast as possible",
    "frontend.page_seed": "seed of the random page placement (translation: random_pages)",
    "core.rob_size": "reorder-buffer entries per core",
    "core.fetch_width": "instructions fetched per core cycle",
    "core.retire_width": "instructions retired per core cycle",
    "core.clock_ghz": "core clock; the ratio to the DRAM clock follows from the speed bin",
    "ecc.partial_write_seed": "seed of the hash that picks the partial writes",
    "ecc.inline_cache_entries": "in-line ECC: an LRU write-back cache of this many ECC "
                                "bursts per channel (unset: none)",
    "nda.enabled": "a near-data accelerator in every rank (docs/reference/nda.md)",
    "nda.kernel": "the kernel every NDA runs",
    "nda.matrix_cols": "GEMV: columns of A (8-byte elements)",
    "nda.embedding_bytes": "GATHER_REDUCE: bytes of each embedding vector (split over the "
                           "ranks)",
    "nda.lookups": "GATHER_REDUCE: outputs, each the sum of pooling vectors",
    "nda.pooling": "GATHER_REDUCE: vectors summed per lookup",
    "nda.launch_cycle": "DRAM cycle at which the NDAs start",
    "nda.packet_latency_cycles": "packetized interface: the hop from the host to the "
                                 "module's scheduler",
    "nda.nda_slice_cycles": "time_slice: the NDA's turn",
    "nda.write_redraw_cycles": "a rank left idle this long after a lost draw is a new "
                               "write opportunity",
    "nda.write_min_host_idle_cycles": "an NDA write waits until the host has had nothing "
                                      "queued for the rank this long",
    "nda.predictor": "next-rank predictor: rank_sequence or queue_head",
    "nda.seed": "seed of the write draws and the gather index stream",
    "eruca.per_subbank_latch": "a row-address latch per sub-bank: no row-path conflicts",
    "eruca.row_compat_bits": "without latches, rows open together must match in this many "
                             "top bits",
    "eruca.bg_data_buses": "data buses per bank group: 1 as DDR4, 2 is ERUCA's dual bus",
    "eruca.subbank_act_weight": "a sub-bank ACT's share of tRRD and of the tFAW window",
    "eruca.avoid_row_path": "scheduler eruca: batch rows compatible with the open ones",
    "eruca.prefer_other_bus": "scheduler eruca: among ready row hits, the other bus of the "
                              "bank group first",
    "eruca.age_cap_cycles": "scheduler eruca: a request older than this is scheduled as by "
                            "FR-FCFS (0: no cap)",
}
# Units by the ending of a key's name (the project names units in keys).
UNITS = (("_cycles", "DRAM clock cycles"), ("_ns", "ns"), ("_ghz", "GHz"),
         ("_bytes", "bytes"), ("_bursts", "64 B bursts"), ("_gbit", "Gbit"),
         ("_fraction", "fraction (0 to 1)"), ("_probability", "probability (0 to 1)"),
         ("_watermark", "fraction of the queue"), ("_entries", "64 B ECC bursts"),
         ("_weight", "weight"), ("_bits", "bits"), ("_queue", "requests"),
         ("_size", "instructions"), ("_width", "instructions per core cycle"),
         ("_dram_cycle", "trace cycles per DRAM cycle"), ("max_outstanding", "requests"),
         ("instructions", "instructions"), ("channels", "channels"), ("ranks", "ranks"),
         ("_per_bank", "units per bank"), ("_buses", "buses"), ("_depth", "accesses"),
         ("lookups", "lookups"), ("pooling", "vectors per lookup"),
         ("_rows", "rows"), ("_cols", "8-byte elements"), ("row_hit_cap", "row hits"),
         ("_banks", "banks per rank"))


def _unit(key: str, kind: str) -> str:
    if kind in ("str", "bool", "list", "dict"):
        return ""
    name = key.rsplit(".", 1)[1]
    for ending, unit in UNITS:
        if name.endswith(ending):
            return unit
    return ""


def _field_comments(cls) -> dict[str, str]:
    """The comment lines written above each field of a config dataclass (the schema's
    descriptions live there)."""
    source = inspect.getsource(cls)
    lines = source.splitlines()
    tree = ast.parse(source)
    comments = {}
    for node in tree.body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            text = []
            i = node.lineno - 2
            while i >= 0 and lines[i].strip().startswith("#"):
                text.insert(0, lines[i].strip().lstrip("#").strip())
                i -= 1
            comments[node.target.id] = " ".join(text)
    return comments


def _allowed(f: dataclasses.Field) -> str:
    meta = f.metadata
    if "choices" in meta:
        return ", ".join(f"`{c}`" for c in meta["choices"])
    parts = []
    if "min" in meta:
        parts.append(f">= {meta['min']}")
    if "max" in meta:
        parts.append(f"<= {meta['max']}")
    if "items" in meta:
        parts.append(f"list of {meta['items'].__name__}")
    if "max_items" in meta:
        parts.append(f"at most {meta['max_items']} items")
    return ", ".join(parts)


def config_keys() -> list[dict]:
    """Every config key: key, type, default, allowed values, unit, users, description.

    Read from the dataclasses of ``memsim/config.py``, their field metadata and the
    comments above their fields. When ``memsim.config.describe_keys()`` exists, it is the
    schema's own description: return ``describe_keys()`` here instead."""
    from memsim import config

    rows = []
    for section in dataclasses.fields(config.Config):
        cls = getattr(config, str(section.type), None)  # the annotations are strings
        if not dataclasses.is_dataclass(cls):
            continue  # Config.name: not a section
        comments = _field_comments(cls)
        for f in dataclasses.fields(cls):
            key = f"{section.name}.{f.name}"
            kind = f.type if isinstance(f.type, str) else f.type.__name__
            optional = kind.endswith(" | None")
            kind = kind.removesuffix(" | None")
            if f.default is not dataclasses.MISSING:
                default = f.default
            else:
                default = f.default_factory()
            rows.append(dict(
                key=key, type=kind, default=("the scheme's default" if optional and
                                             default is None else default),
                allowed=_allowed(f), unit=_unit(key, kind),
                users=KEY_USERS.get(key, SECTION_USERS[section.name]),
                description=comments.get(f.name) or DESCRIPTIONS.get(key, "")))
    return rows


def config_page() -> str:
    from memsim import config

    keys = config_keys()
    out = ["# Config keys",
           "",
           "Every key of a memsim config, generated from the config schema "
           "(`memsim/config.py`) when this site is built: its type, default, allowed "
           "values, unit, and when it may be set. A config is YAML with these sections; "
           "`-p key=value` overrides any key, and `memsim config show` prints a resolved "
           "config (a valid config file). Unknown keys, values outside the allowed ones and "
           "keys of a mechanism that is off are errors naming the key path. "
           f"The default preset is `{config.DEFAULT_PRESET}`; `memsim config list` lists the "
           "presets.",
           ""]
    for section, rows in itertools.groupby(keys, key=lambda r: r["key"].split(".")[0]):
        out += [f"## {section}", "", f"Used by: {SECTION_USERS.get(section, '')}.", "",
                "| key | type | default | allowed | unit | used by | meaning |",
                "|---|---|---|---|---|---|---|"]
        for row in rows:
            out.append(f"| `{row['key']}` | {row['type']} | {_default(row['default'])} | "
                       f"{_cell(row['allowed'])} | {row['unit']} | {row['users']} | "
                       f"{_cell(row['description'])} |")
        out.append("")
    return "\n".join(out)


def _default(value) -> str:
    if value in ({}, []):
        return "empty"
    if isinstance(value, str) and value.startswith("the "):
        return value  # a description ("the scheme's default"), not a value
    return _cell(f"`{value}`")
