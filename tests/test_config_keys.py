"""The config reference: every key's type, default, allowed values, unit, users and help
(``memsim.config.describe_keys`` and ``memsim config keys``), read from the config
dataclasses' field metadata."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from memsim import config
from memsim.cli import keys_markdown, keys_table, shown_default
from memsim.config import Config, KeyInfo, describe_keys

ROOT = Path(__file__).resolve().parent.parent


def sections():
    """(section name, its dataclass) for every section of Config."""
    return [(f.name, f.default_factory) for f in dataclasses.fields(Config)
            if dataclasses.is_dataclass(f.default_factory)]


def every_key() -> list[tuple[str, dataclasses.Field]]:
    """(dotted key, field) of every key, straight from the dataclasses."""
    keys = [(f"{name}.{f.name}", f) for name, cls in sections()
            for f in dataclasses.fields(cls)]
    return keys + [(f.name, f) for f in dataclasses.fields(Config)
                   if not dataclasses.is_dataclass(f.default_factory)]


@pytest.mark.parametrize("key, f", every_key(), ids=[k for k, _ in every_key()])
def test_every_key_has_help_unit_and_users(key, f):
    """A new key without its help, unit and users fails here (give it with _key)."""
    for what in ("help", "unit", "used_by"):
        value = f.metadata.get(what)
        assert isinstance(value, str) and value.strip(), f"{key}: no {what} metadata"
    assert not f.metadata["help"].endswith("."), f"{key}: help is one line without a stop"


def test_describe_keys_lists_every_key_once_in_section_order():
    listed = [k.key for k in describe_keys()]
    assert listed == [k for k, _ in every_key()]
    assert len(listed) == len(set(listed))
    assert listed[0] == "dram.standard" and listed[-1] == "name"


def test_describe_keys_defaults_are_the_config_defaults():
    cfg = Config()
    for k in describe_keys():
        node = cfg
        for part in k.key.split("."):
            node = getattr(node, part)
        assert k.default == node, k.key


def test_records_are_plain_and_exact():
    keys = {k.key: k for k in describe_keys()}
    assert keys["controller.read_queue"] == KeyInfo(
        key="controller.read_queue", type="int", default=32, allowed="1 to 4,096",
        unit="entries", used_by="DDR4, DDR5, LPDDR5, HBM3", help="read queue entries per channel")
    assert keys["controller.scheduler"].allowed == "fcfs, fcfs_strict, frfcfs, frfcfs_cap, eruca"
    assert keys["nda.host_slice_cycles"].used_by == "NDAs, nda.policy: time_slice"
    assert keys["nda.host_slice_cycles"].unit == "cycles"
    assert keys["controller.write_high_watermark"].allowed == "0.0 to 1.0"
    # an optional key says it may stay unset; the ECC keys' users come from memsim.ecc
    assert keys["ecc.ondie_rmw_cycles"].type == "int | None"
    assert keys["ecc.ondie_rmw_cycles"].default is None
    assert keys["ecc.ondie_rmw_cycles"].allowed.endswith("; or unset (null)")
    assert keys["ecc.ondie_rmw_cycles"].used_by == "ECC schemes ondie"
    assert keys["ecc.crc_data_mask"].used_by == "ECC schemes write_crc, aiecc"
    assert keys["dram.refresh"].allowed == "true, false"
    assert dataclasses.asdict(keys["mapping.xor_bank"])["unit"] == "flag"


def test_allowed_choices_are_the_choices_the_config_accepts():
    """The allowed list is the one the value check uses: each choice loads, and a value
    outside it is refused naming the key."""
    keys = {k.key: k for k in describe_keys()}
    for choice in keys["controller.page_policy"].allowed.split(", "):
        assert config.load(None, [f"controller.page_policy={choice}"])
    with pytest.raises(config.ConfigError, match=r"^controller\.page_policy: 'lazy' is not "
                                                 r"one of: open, closed, timeout$"):
        config.load(None, ["controller.page_policy=lazy"])


def test_shown_defaults_are_yaml():
    assert [shown_default(v) for v in (True, None, "", {}, [], 0.8, "ro-ba-bg-ra-co-ch")] == \
        ["true", "null", '""', "{}", "[]", "0.8", "ro-ba-bg-ra-co-ch"]


def test_markdown_table_has_a_row_per_key():
    keys = describe_keys()
    lines = keys_markdown(keys).splitlines()
    assert lines[0] == "| key | type | default | allowed | unit | used by | help |"
    assert len(lines) == 2 + len(keys)
    assert ("| `controller.read_queue` | int | `32` | 1 to 4,096 | entries | "
            "DDR4, DDR5, LPDDR5, HBM3 | read queue entries per channel |") in lines
    # every row has the 7 cells (a "|" inside a cell would be escaped)
    assert all(line.replace("\\|", "").count("|") == 8 for line in lines)


def test_text_table_has_every_key_and_its_help():
    text = keys_table(describe_keys())
    lines = text.splitlines()
    assert lines[0].split() == ["KEY", "TYPE", "DEFAULT", "UNIT", "ALLOWED"]
    assert "[nda]" in lines
    row = next(line for line in lines if line.startswith("controller.read_queue "))
    assert row.split() == ["controller.read_queue", "int", "32", "entries", "1", "to", "4,096"]
    help_line = lines[lines.index(row) + 1]
    assert help_line == "    read queue entries per channel. Used by: DDR4, DDR5, LPDDR5, HBM3"
    for k in describe_keys():
        assert any(line.startswith(k.key + " ") or line == k.key for line in lines), k.key


def test_memsim_config_keys_command():
    run = [sys.executable, "-m", "memsim", "config", "keys"]
    text = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=60)
    md = subprocess.run(run + ["--format", "markdown"], cwd=ROOT, capture_output=True,
                        text=True, timeout=60)
    assert text.returncode == md.returncode == 0, text.stderr + md.stderr
    assert text.stdout == keys_table(describe_keys())
    assert md.stdout == keys_markdown(describe_keys())
