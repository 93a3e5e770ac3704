"""Configs that loaded silently or said things twice: each is now one clear message
naming the key or the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memsim import config
from memsim.config import ConfigError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "traces" / "example_mix.trace"
STALE = ("dram:\n  speed: DDR4_3200AA\n  timing: {CL: 16, tRCD: 16}\n")
STALE_WARNING = ("memsim: warning: dram.timing: CL 16, tRCD 16 are DDR4_2400R's values, not "
                 "dram.speed DDR4_3200AA's (CL 22, tRCD 22): the run uses these overrides; "
                 "remove them from dram.timing to use the speed bin's timings")


def memsim(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsim", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("command", [("run", EXAMPLE, "-q"), ("config", "show")])
def test_a_config_files_warning_is_printed_once(tmp_path, command):
    """A YAML config with another speed bin's timings: the file was checked (to name it
    in errors) and then resolved, and each warned."""
    path = tmp_path / "stale.yaml"
    path.write_text(STALE)
    proc = memsim(*command, "-c", path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [STALE_WARNING]


DDR5 = ("dram.standard=DDR5", "dram.speed=DDR5_4800B", "dram.density_gbit=16")


@pytest.mark.parametrize("mode", ["fine_granularity", "same_bank"])
def test_refresh_mode_without_refresh_is_an_error_naming_both(mode):
    with pytest.raises(ConfigError, match=(
            rf"^dram\.refresh_mode: '{mode}' with dram\.refresh: false: there is no refresh "
            rf"to issue that way \(set dram\.refresh: true, or leave dram\.refresh_mode at "
            rf"all_bank\)$")):
        config.load(None, [*DDR5, "dram.refresh=false", f"dram.refresh_mode={mode}"])
    # the default mode with refresh off, and the mode with refresh on, still load
    assert not config.load(None, [*DDR5, "dram.refresh=false"]).dram.refresh
    assert config.load(None, [*DDR5, f"dram.refresh_mode={mode}"]).dram.refresh_mode == mode


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n"])
def test_an_empty_config_file_is_an_error_naming_it(tmp_path, text):
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=(
            rf"^{path}: the config file is empty \(expected a mapping of sections: dram, "
            rf"controller, mapping, frontend, core, ecc, nda, eruca, name\); name a preset "
            rf"instead, e.g\. -c ddr4_2400_x8_1ch1r$")):
        config.load(path)


NDA = ("nda.enabled=true",)


@pytest.mark.parametrize("key, value, needs, current", [
    ("host_slice_cycles", 500, "policy: time_slice", "'host_first'"),
    ("nda_slice_cycles", 500, "policy: time_slice", "'host_first'"),
    ("row_hit_cap", 3, "policy: row_hit_cap", "'host_first'"),
    ("packet_latency_cycles", 20, "interface: packetized", "'traditional'"),
])
def test_nda_keys_of_one_policy_or_interface_are_errors_under_another(key, value, needs,
                                                                      current):
    what = needs.split(":")[0]
    with pytest.raises(ConfigError, match=(
            rf"^nda\.{key}: only used with nda\.{needs} \(nda\.{what} is {current}\)$")):
        config.load(None, [*NDA, f"nda.{key}={value}"])
    # under its own policy or interface it loads
    cfg = config.load(None, [*NDA, f"nda.{needs.replace(': ', '=')}", f"nda.{key}={value}"])
    assert getattr(cfg.nda, key) == value


def test_row_hit_cap_under_time_slice_names_the_policy_in_force():
    with pytest.raises(ConfigError, match=r"^nda\.row_hit_cap: only used with nda\.policy: "
                                          r"row_hit_cap \(nda\.policy is 'time_slice'\)$"):
        config.load(None, [*NDA, "nda.policy=time_slice", "nda.row_hit_cap=3"])


@pytest.mark.parametrize("ranks, channels, vector_bytes, multiple", [
    (1, 1, 100, 64), (1, 1, 96, 64), (2, 1, 64, 128), (2, 2, 384, 256), (4, 1, 1000, 256)])
def test_vector_bytes_must_be_whole_bursts_on_every_rank(ranks, channels, vector_bytes,
                                                         multiple):
    with pytest.raises(ConfigError, match=(
            rf"^nda\.vector_bytes: {vector_bytes} B cannot be split into whole 64 B bursts "
            rf"over {ranks * channels} rank\(s\) \(expected a multiple of {multiple}\)$")):
        config.load(None, [*NDA, f"dram.ranks={ranks}", f"dram.channels={channels}",
                           f"nda.vector_bytes={vector_bytes}"])


@pytest.mark.parametrize("kernel", ["COPY", "SCAL", "AXPY", "DOT"])
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_accepted_vectors_are_exactly_the_bursts_the_kernel_moves(kernel, ranks):
    """What the check protects: the kernel's operands (memsim.nda.program) hold exactly
    vector_bytes / 64 bursts over all ranks, none rounded up."""
    from memsim import nda

    for bursts in (ranks, 3 * ranks, 64 * ranks):
        cfg = config.load(None, [*NDA, f"dram.ranks={ranks}", f"nda.kernel={kernel}",
                                 f"nda.vector_bytes={bursts * 64}"])
        prog = nda.program(cfg.nda, nda.Geometry.from_dram(cfg.dram))
        assert prog.operands[0].bursts * ranks == bursts
