"""MkDocs hook: the reference pages generated from the code at build time.

- ``reference/cli.md``: every command and option of ``memsim``, from the parser
  (``memsim.cli.build_parser()``), so a renamed option changes the page, not a reader's
  afternoon.
- ``reference/config.md``: every config key with its default, allowed values, unit and
  the standards and mechanisms that use it, from the config schema
  (``memsim.config.describe_keys()``).

The pages exist only in the built site (they are not files in ``docs/``). The hook
imports memsim from the checkout it lives in, not from an installed copy.
"""

from __future__ import annotations

import argparse
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


def config_page() -> str:
    """Every config key (``memsim.config.describe_keys()``, the schema's own description
    of itself: what ``memsim config keys`` prints), a table per section."""
    from memsim import config
    from memsim.cli import shown_default

    out = ["# Config keys",
           "",
           "Every key of a memsim config, generated from the config schema "
           "(`memsim/config.py`, `memsim.config.describe_keys()`) when this site is built: "
           "its type, default, allowed values, unit, which standards or mechanisms use it, "
           "and what it means; `memsim config keys` prints the same. A config is YAML "
           "with these sections; `-p key=value` overrides any key, and `memsim config show` "
           "prints a resolved config (a valid config file). Unknown keys, values outside "
           "the allowed ones and keys of a mechanism that is off are errors naming the key "
           f"path. The default preset is `{config.DEFAULT_PRESET}`; `memsim config list` "
           "lists the presets.",
           ""]
    for section, rows in itertools.groupby(config.describe_keys(),
                                           key=lambda k: k.key.split(".")[0]):
        out += [f"## {section}", "",
                "| key | type | default | allowed | unit | used by | meaning |",
                "|---|---|---|---|---|---|---|"]
        for k in rows:
            out.append(f"| `{k.key}` | {k.type} | `{_cell(shown_default(k.default))}` | "
                       f"{_cell(k.allowed)} | {_cell(k.unit)} | {_cell(k.used_by)} | "
                       f"{_cell(k.help)} |")
        out.append("")
    return "\n".join(out)
