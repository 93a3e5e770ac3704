"""``memsim compare`` of presets and YAML files (``-c A,B``) and of named variants
(``--variant NAME:KEY=VALUE,...``), and its errors in the words the user typed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memsim import cli
from memsim.compare import CompareError, build_sweep, parse_variant
from memsim.sim import run
from memsim.sweep import load_spec
from memsim.trace import generate, write_trace

ROOT = Path(__file__).resolve().parent.parent
PRESET = "ddr4_2400_x8_1ch1r"
ERUCA_PRESET = "ddr4_2400_x8_1ch1r_eruca"
ERUCA = "eruca:dram.subbank_scheme=eruca,dram.subbanks_per_bank=2,controller.scheduler=eruca"


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("cmpc") / "r.trace"
    write_trace(path, *generate("random", 300, seed=5, write_ratio=0.3,
                                footprint_bytes=1 << 28))
    return path


@pytest.fixture(scope="module")
def fast_yaml(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "fast.yaml"
    path.write_text("dram: {speed: DDR4_3200AA}\ncontroller: {read_queue: 16}\n")
    return path


def error_of(*args, **kw) -> str:
    with pytest.raises(CompareError) as e:
        build_sweep(*args, **kw)
    return str(e.value)


# ---------------------------------------------------------------- building (no runs)

def test_parse_variant():
    assert parse_variant("plain:") == ("plain", {})
    assert parse_variant(ERUCA) == ("eruca", {"dram.subbank_scheme": "eruca",
                                              "dram.subbanks_per_bank": 2,
                                              "controller.scheduler": "eruca"})
    # a comma inside a value (a YAML list) stays in the value
    assert parse_variant("t:dram.timing={tRTRS: 1, tRCD: 17},controller.read_queue=8") == (
        "t", {"dram.timing": {"tRTRS": 1, "tRCD": 17}, "controller.read_queue": 8})


def test_configs_are_an_axis_labelled_by_name(trace, fast_yaml):
    sw = build_sweep([str(trace)], ["controller.scheduler=fcfs,frfcfs"],
                     [f"{PRESET},{fast_yaml}"])
    assert sw.params == ["base", "controller.scheduler"]
    assert [p.tags for p in sw.points] == [{"base": PRESET}] * 2 + [{"base": "fast"}] * 2
    assert [p.config["dram"]["speed"] for p in sw.points] == [
        "DDR4_2400R", "DDR4_2400R", "DDR4_3200AA", "DDR4_3200AA"]
    assert [p.config["controller"]["read_queue"] for p in sw.points] == [32, 32, 16, 16]
    from memsim.sweep.spec import labels

    assert list(labels(sw.points, sw.params).values()) == [
        f"{PRESET}, fcfs", f"{PRESET}, frfcfs", "fast, fcfs", "fast, frfcfs"]


def test_named_variants_label_the_points_in_place_of_their_settings(trace):
    sw = build_sweep([str(trace)], ["controller.read_queue=16,32"], None, ["plain:", ERUCA])
    # the keys only the variants set are not columns: the variant's name stands for them
    assert sw.params == ["variant", "controller.read_queue"]
    from memsim.sweep.spec import labels

    assert list(labels(sw.points, sw.params).values()) == [
        "plain, read_queue=16", "eruca, read_queue=16", "plain, read_queue=32",
        "eruca, read_queue=32"]
    eruca = sw.points[1].config
    assert (eruca["dram"]["subbank_scheme"], eruca["dram"]["subbanks_per_bank"],
            eruca["controller"]["scheduler"], eruca["controller"]["read_queue"]) == (
        "eruca", 2, "eruca", 16)
    assert sw.points[0].config["dram"]["subbank_scheme"] == "none"


def test_the_stored_spec_is_the_same_sweep(trace, fast_yaml):
    """sweep.json keeps the equivalent spec: memsim sweep on it runs the same configs."""
    sw = build_sweep([str(trace)], ["controller.read_queue=16,32", "dram.refresh=false"],
                     [f"{PRESET},{fast_yaml}"], ["plain:", "wide:controller.write_queue=64"])
    again = load_spec(sw.spec)
    assert [p.config for p in again.points] == [p.config for p in sw.points]
    assert [p.tags for p in again.points] == [p.tags for p in sw.points]
    assert again.params == sw.params == ["base", "variant", "controller.read_queue"]
    assert len(sw.points) == 2 * 2 * 2


# ---------------------------------------------------------------- errors

def test_config_errors_name_the_c_item(trace, tmp_path):
    t = [str(trace)]
    assert error_of(t, [], ["nope"]).startswith(
        "-c nope: no such file or preset (presets: ddr4_2400_x4_1ch1r_chipkill, ")
    assert error_of(t, [], [f"{PRESET},nope.yaml"]).startswith(
        "-c nope.yaml: no such file or preset")
    bad = tmp_path / "bad.yaml"
    bad.write_text("controller: {read_queue: 0}\n")
    assert error_of(t, [], [f"{PRESET},{bad}"]) == (
        f"-c {bad}: controller.read_queue: 0 is below the minimum 1")
    assert error_of(t, [], [f"{PRESET},{PRESET}"]) == f"-c {PRESET}: listed twice"
    assert error_of(t, [], [f"{PRESET},"]) == (
        f"-c {PRESET},: empty name in the list (expected -c A,B,... presets or YAML files)")


def test_a_grid_value_valid_only_with_others_names_the_p_value(trace):
    """The issue's case: -p dram.subbank_scheme=none,eruca."""
    assert error_of([str(trace)], ["dram.subbank_scheme=none,eruca"]) == (
        "-p dram.subbank_scheme=eruca: dram.subbank_scheme: 'eruca' needs "
        "dram.subbanks_per_bank of 2 or more (got 1) (settings valid only together go in "
        "one --variant NAME:KEY=VALUE,KEY=VALUE)")


def test_a_value_that_clashes_with_the_c_config_names_both(trace):
    assert error_of([str(trace)], ["dram.subbanks_per_bank=1,2"], [ERUCA_PRESET]) == (
        f"-c {ERUCA_PRESET} with -p dram.subbanks_per_bank=1: dram.subbank_scheme: 'eruca' "
        f"needs dram.subbanks_per_bank of 2 or more (got 1) (settings valid only together "
        f"go in one --variant NAME:KEY=VALUE,KEY=VALUE)")


def test_every_bad_point_is_reported_once(trace):
    message = error_of([str(trace)], ["controller.read_queue=0,8",
                                      "controller.write_queue=0,8"])
    assert message == (
        "configurations to compare that are invalid:\n"
        "  -p controller.read_queue=0: controller.read_queue: 0 is below the minimum 1\n"
        "  -p controller.write_queue=0: controller.write_queue: 0 is below the minimum 1")


def test_unknown_p_key_names_the_p_option(trace):
    assert error_of([str(trace)], ["controller.shceduler=fcfs,frfcfs"]).startswith(
        "-p controller.shceduler=fcfs,frfcfs: unknown config key (expected one of: "
        "controller.scheduler, ")


@pytest.mark.parametrize("variants, message", [
    (["eruca"], "--variant 'eruca': expected NAME:KEY=VALUE,KEY=VALUE,... (e.g. --variant "
                "eruca:dram.subbank_scheme=eruca,dram.subbanks_per_bank=2; NAME: alone is "
                "the base config as is)"),
    (["dram.subbank_scheme=eruca"], "--variant 'dram.subbank_scheme=eruca': expected NAME:"),
    (["e:dram.subbank_schem=eruca"], "--variant e:dram.subbank_schem=eruca: unknown config "
                                     "key (expected one of: dram.standard, "),
    (["e:controller.read_queue"], "--variant e:controller.read_queue: "
                                  "'controller.read_queue' is not KEY=VALUE"),
    (["e:controller.read_queue=8,controller.read_queue=16"],
     "--variant e:controller.read_queue=8,controller.read_queue=16: controller.read_queue is "
     "set twice"),
    (["a:", "a:controller.read_queue=8"], "--variant a: given twice (each variant needs its "
                                          "own name)"),
    (["e:dram.subbank_scheme=eruca,dram.subbanks_per_bank=1"],
     "--variant e:dram.subbank_scheme=eruca,dram.subbanks_per_bank=1: dram.subbank_scheme: "
     "'eruca' needs dram.subbanks_per_bank of 2 or more (got 1)"),
])
def test_variant_errors_name_the_variant_as_typed(trace, variants, message):
    assert error_of([str(trace)], [], None, variants).startswith(message)


def test_a_key_in_a_variant_and_in_p_is_refused(trace):
    assert error_of([str(trace)], ["controller.scheduler=fcfs,frfcfs"], None,
                    ["e:controller.scheduler=eruca"]) == (
        "--variant e:controller.scheduler=eruca: controller.scheduler is also given by -p "
        "controller.scheduler=fcfs,frfcfs; set it in one place")


def test_trace_errors(trace, tmp_path):
    assert error_of([str(tmp_path / "missing.trace")], []) == (
        f"{tmp_path / 'missing.trace'}: no such trace file")
    assert error_of([str(trace), str(trace)], []) == "compare: a trace is named twice"


def test_cli_exits_2_with_the_message_and_writes_nothing(trace, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["compare", str(trace), "-p", "dram.subbank_scheme=none,eruca",
                     "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memsim: error: -p dram.subbank_scheme=eruca: ")
    assert "spec" not in err and "grid point" not in err
    assert cli.main(["compare", str(trace), "-c", f"{PRESET},nope", "-o", str(out)]) == 2
    assert capsys.readouterr().err.startswith("memsim: error: -c nope: no such file or preset")
    assert not out.exists()


# ---------------------------------------------------------------- runs

def _table(capsys) -> list[list[str]]:
    return [line.split() for line in capsys.readouterr().out.splitlines()]


def test_compare_a_preset_and_a_yaml_file(trace, fast_yaml, tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["compare", str(trace), "-c", f"{PRESET},{fast_yaml}", "-o", str(out),
                     "-j", "1", "-q"]) == 0
    rows = _table(capsys)
    assert [r[0] for r in rows[1:3]] == [PRESET, "fast"]
    assert " ".join(rows[3]).startswith("2 runs (2 run now, 0 reused, 0 failed)")
    for r, cfg in zip(rows[1:3], (PRESET, str(fast_yaml)), strict=True):
        s = run(trace, cfg).summary()
        assert r[1:3] == [f"{s['bandwidth_gbps']['total']:.3f}",
                          f"{s['latency_ns']['read']['mean']:.2f}"]
    import pandas as pd

    table = pd.read_csv(out / "results.csv")
    assert table["base"].tolist() == [PRESET, "fast"]
    assert table["config.dram.speed"].tolist() == ["DDR4_2400R", "DDR4_3200AA"]
    assert (out / "comparison.png").read_bytes()[:4] == b"\x89PNG"


def test_compare_named_variants_that_are_valid_only_together(trace, tmp_path, capsys):
    """The issue's case: plain DDR4 against ERUCA, which needs its sub-banks and its
    scheduler together."""
    out = tmp_path / "o"
    assert cli.main(["compare", str(trace), "--variant", "plain:", "--variant", ERUCA,
                     "-o", str(out), "-j", "1", "-q"]) == 0
    rows = _table(capsys)
    assert [r[0] for r in rows[1:3]] == ["plain", "eruca"]
    overrides = ([], ["dram.subbank_scheme=eruca", "dram.subbanks_per_bank=2",
                      "controller.scheduler=eruca"])
    for r, over in zip(rows[1:3], overrides, strict=True):
        s = run(trace, None, over).summary()
        assert r[1:4] == [f"{s['bandwidth_gbps']['total']:.3f}",
                          f"{s['latency_ns']['read']['mean']:.2f}",
                          f"{s['latency_ns']['read']['p99']:.2f}"]
    from memsim.plot import plot

    fig = plot(out, "schedulers")
    # the variants are compared, not the schedulers they set
    assert fig._suptitle.get_text().startswith("Variant comparison (trace: r.trace)")
    assert not fig.legends
    ticks = {t.get_text() for ax in fig.axes for t in ax.get_xticklabels()}
    assert ticks == {"plain", "eruca"}


def test_help_shows_every_form():
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    text = re.sub(r"\s+", " ", buf.getvalue())
    for phrase in ("-c A,B,...", "--variant NAME:KEY=VALUE,KEY=VALUE", "-p KEY=A,B,...",
                   "NAME: alone is the base config as is"):
        assert phrase in text, phrase
