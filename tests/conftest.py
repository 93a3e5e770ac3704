"""Test-session settings.

**The end of an xdist worker.** When the last worker reports its session finished,
the controller ends every worker's execnet gateway, and execnet gives a worker 5
seconds to finish what it still runs (pytest's clean-up: five full garbage
collections among other things) before it sends the worker a SIGINT. A worker's heap
holds numba's compiler objects for every loop variant it compiled or loaded, and
under load those collections take longer than that: the SIGINT then raises
KeyboardInterrupt wherever the worker is, and inside a finalizer that the collector
runs it cannot propagate, so pytest printed ``PytestUnraisableExceptionWarning ...
KeyboardInterrupt``. (Reproduced with objects whose finalizers take 15 s in all:
execnet's debug log, ``EXECNET_DEBUG=2``, says "execution ongoing after 5 secs ...
sending ourselves a SIGINT", and the worker's unraisable hook gets KeyboardInterrupt
in a finalizer; with the hook below, no SIGINT.) So a worker collects its garbage
once while its session finishes, before it reports that to the controller (the
finalizers run here, and an exception one raises is reported as usual), and freezes
what is left, so that the clean-up's collections have nothing old to walk.
"""

from __future__ import annotations

import gc
import os
import re
import sys
from pathlib import Path

import pytest

# **numba's optimisation level and cache for the test run.** Most of the suite's CPU
# time is numba compiling the engine's loop variants, and half to two thirds of a
# compile is LLVM optimising the machine code (numba's default, NUMBA_OPT=3). The tests
# check what the loop computes, which the level does not change (integer and IEEE
# arithmetic, no fast-math), so the suite compiles at level 1: LLVM then takes about
# 0.7x the time, the whole compile 0.82-0.84x (docs/speed.md). numba's disk cache does
# not tell the levels apart (its index keys on the signature, the CPU and the function's code), so
# the test run keeps its own cache, in tests/__pycache__ (or under a NUMBA_CACHE_DIR
# of the user's), and a user's runs keep loading and writing the level-3 loops beside
# the engine's source. numba reads both settings when it is imported, so they are set
# here, before any test imports memsim; the xdist workers, and the memsim processes the
# tests start, inherit them. NUMBA_OPT set by the caller wins (NUMBA_OPT=3 runs the
# suite on the level-3 code, in a cache of its own too).
if "numba" in sys.modules:  # (a plugin imported it: the settings would not apply)
    raise pytest.UsageError("tests/conftest.py must run before numba is imported")
_OPT = os.environ.setdefault("NUMBA_OPT", "1")
_CACHE = os.environ.get("NUMBA_CACHE_DIR") or Path(__file__).resolve().parent / "__pycache__"
if Path(_CACHE).name != f"numba-opt{_OPT}":  # (not yet set: an xdist worker inherits it)
    os.environ["NUMBA_CACHE_DIR"] = str(Path(_CACHE) / f"numba-opt{_OPT}")
# OpenBLAS's threads (numpy's linear-algebra library starts one per core at import,
# and they spin for a while waiting for work): the memsim command asks for one
# (memsim/command.py); the xdist workers and the Python processes the tests start
# inherit the same setting, so that none of them pays for threads it never uses.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    # (xdist's own pytest_sessionfinish, a wrapper, reports "finished" after this)
    if "PYTEST_XDIST_WORKER" in os.environ:
        gc.collect()
        gc.freeze()


# ---------------------------------------------------------------- test tiers
#
# Every test is in exactly one tier (the markers are registered in pyproject.toml), so
# that a contributor can run the fast part first:
#
#   python -m pytest -m data -n 0        # no compiled loop: seconds
#   python -m pytest -m engine           # the plain DDR4 loop
#   python -m pytest -m mechanism        # a mechanism's loop variant
#   python -m pytest -m slow             # long runs, Dask clusters, many subprocesses
#
# A test's tier is its file's (FILE_TIERS), unless TEST_TIERS names the test (all its
# parameters) or the test carries a tier marker itself. A test in no tier, or in two,
# stops the collection. While a data test runs, building a loop variant fails it, and
# while an engine test runs, building any variant but the plain loop does: the tier
# says what a test compiles, and stays true. (Subprocesses are not watched: a test that
# runs memsim in a subprocess is in the engine tier or above, or slow.)

TIERS = ("data", "engine", "mechanism", "slow")

FILE_TIERS = {
    # data: configs, traces, mapping, device tables, the harness, the checker on logs
    # written by hand, figures from results tables written by hand
    "test_check_rules.py": "data",
    "test_check_subbank.py": "data",
    "test_compare_configs.py": "data",
    "test_config.py": "data",
    "test_device.py": "data",
    "test_ecc_check.py": "data",
    "test_energy.py": "data",
    "test_harness.py": "data",
    "test_mapping.py": "data",
    "test_outfile.py": "data",
    "test_percentiles.py": "data",
    "test_plot_kinds.py": "data",
    "test_readahead.py": "data",
    "test_tiers.py": "data",
    "test_trace_errors.py": "data",
    "test_trace_fastparse.py": "data",
    "test_trace_formats.py": "data",
    "test_trace_generate.py": "data",
    "test_value_bounds.py": "data",
    "test_config_keys.py": "data",
    "test_docs.py": "data",
    "test_config_defects.py": "data",
    "test_front_door.py": "data",
    "test_imports.py": "data",
    "test_trace_short_records.py": "data",
    "test_cache_config.py": "data",
    "test_cache_model.py": "data",
    "test_cache_filter.py": "data",
    "test_instr_traces.py": "data",
    # engine: the plain loop
    "test_compare.py": "engine",
    "test_compiler.py": "engine",
    "test_compiling.py": "engine",
    "test_ddr5_mapping.py": "engine",
    "test_trace_clock.py": "engine",
    "test_controller_fidelity.py": "engine",
    "test_ddr5.py": "engine",
    "test_lpddr5.py": "engine",
    "test_lpddr5_refresh.py": "data",
    "test_lpddr5_bl16_data.py": "data",
    "test_lpddr5_bl16.py": "engine",
    "test_hbm3_data.py": "data",
    "test_hbm3.py": "mechanism",
    "test_hbm3_refresh.py": "data",
    "test_refresh_serves_open_rows.py": "engine",
    "test_standards_shape.py": "data",
    "test_ddr5_data.py": "engine",
    "test_engine_closed_form.py": "engine",
    "test_engine_event_vs_tick.py": "engine",
    "test_engine_nojit.py": "engine",
    "test_engine_scheduling.py": "engine",
    "test_frfcfs_cap_backlog.py": "engine",
    "test_fuzz.py": "engine",
    "test_outputs.py": "engine",
    "test_progress.py": "engine",
    "test_results.py": "engine",
    "test_rough_edges.py": "engine",
    "test_simpy.py": "engine",
    "test_simpy_result.py": "engine",
    "test_startup.py": "engine",
    "test_sweep.py": "engine",
    "test_trace_sim.py": "engine",
    "test_validation.py": "engine",
    # mechanism: sub-banks, NDAs, cores, ECC, DDR5 same-bank / LPDDR5 per-bank refresh
    "test_core_caches.py": "mechanism",
    "test_cores.py": "mechanism",
    "test_ddr5_mechanisms.py": "mechanism",
    "test_ddr5_refresh.py": "mechanism",
    "test_ecc.py": "mechanism",
    "test_nda.py": "mechanism",
    "test_nda_frontends.py": "mechanism",
    "test_nda_rows.py": "mechanism",
    "test_pairs.py": "mechanism",
    "test_plot.py": "mechanism",
    "test_subbank.py": "mechanism",
    # slow: memsim in subprocesses, channel threads, sweeps stopped by signals
    "test_benchmark_help.py": "slow",
    "test_channels.py": "slow",
    "test_cli.py": "slow",
    "test_cli_messages.py": "slow",
    "test_command_startup.py": "slow",
    "test_docs_commands.py": "slow",
    "test_readme.py": "slow",
    "test_readyset.py": "slow",
    "test_signals.py": "slow",
    "test_capture.py": "slow",
    "test_workload_traces.py": "slow",
}

TEST_TIERS = {
    # in a data file, but running the plain loop
    "test_compare_configs.py::test_compare_a_preset_and_a_yaml_file": "engine",
    "test_config.py::test_resolved_config_travels_with_the_result": "engine",
    "test_config.py::test_timing_override_reaches_the_spec_and_the_engine": "engine",
    "test_energy.py::test_act_read_pre_cycles_on_one_bank": "engine",
    "test_energy.py::test_an_idle_rank_draws_only_precharged_background": "engine",
    "test_energy.py::test_refresh_energy_and_refresh_counts_as_active_background": "engine",
    "test_energy.py::test_writes_under_the_closed_page_policy": "engine",
    "test_mapping.py::test_address_beyond_capacity_names_file_and_line": "engine",
    "test_mapping.py::test_address_beyond_capacity_names_the_request": "engine",
    "test_mapping.py::test_capacity_grows_with_channels_and_ranks": "engine",
    "test_mapping.py::test_mapping_order_in_the_config_reaches_the_engine": "engine",
    "test_mapping.py::test_negative_address_is_rejected": "engine",
    "test_front_door.py::test_the_front_door_runs_a_trace": "engine",
    "test_mapping.py::test_wrap_addresses_wraps_at_capacity": "engine",
    # a mechanism's variant, in a data or engine file
    "test_compare_configs.py::test_compare_named_variants_that_are_valid_only_together":
        "mechanism",
    "test_ddr5_data.py::test_24_gb_random_traffic_over_the_whole_capacity_is_clean":
        "mechanism",
    "test_lpddr5_refresh.py::test_idle_channel_refreshes_a_pair_every_trefipb_losing_a_16th_of"
    "_trfcpb_a_bank": "mechanism",
    "test_lpddr5_refresh.py::test_a_read_that_meets_a_refpb_waits_its_rule": "mechanism",
    "test_lpddr5_refresh.py::test_random_reads_and_writes_with_per_bank_refresh_are_clean":
        "mechanism",
    "test_hbm3_refresh.py::test_idle_pseudo_channel_refreshes_a_bank_every_trefipb_losing_5_1"
    "_percent": "mechanism",
    "test_hbm3_refresh.py::test_a_read_that_meets_a_refpb_waits_its_rule": "mechanism",
    "test_hbm3_refresh.py::test_random_reads_and_writes_with_per_bank_refresh_are_clean":
        "mechanism",
    "test_engine_closed_form.py::test_as_fast_as_possible_in_line_ecc_costs_latency_too":
        "mechanism",
    "test_engine_closed_form.py::test_where_chunks_end_changes_nothing": "mechanism",
    "test_simpy.py::test_simpy_steps_the_loop_a_trace_replay_compiles": "mechanism",
    "test_compiling.py::test_every_variant_has_a_name_and_a_config_that_selects_it":
        "mechanism",
    # slow: seconds each (tens under load), Dask clusters, memsim in subprocesses
    "test_check_rules.py::test_check_file_chunks_keep_state": "slow",
    "test_check_rules.py::test_chunked_file_equals_whole_frame": "slow",
    "test_compare.py::test_dask_backend": "slow",
    "test_compare.py::test_docs_compare_example_prints_the_table_shown": "slow",
    "test_compiler.py::test_live_map_is_numbas": "slow",
    "test_compiler.py::test_engine_never_indexes_below_zero": "slow",
    "test_cores.py::test_docs_cores_example_runs": "slow",
    "test_ddr5_refresh.py::test_memsim_run_check_and_memsim_check_know_the_refresh_mode":
        "slow",
    "test_ecc.py::test_cli_run_check_and_errors": "slow",
    "test_outputs.py::test_refuses_to_overwrite_the_input_trace_or_config": "slow",
    "test_outputs.py::test_trace_gen_interrupted_keeps_the_previous_trace": "slow",
    "test_pairs.py::test_a_trace_on_one_rank_of_four_gets_the_one_rank_commands": "slow",
    "test_rough_edges.py::test_a_config_saved_by_config_show_follows_a_new_speed_bin": "slow",
    "test_rough_edges.py::test_check_errors_name_the_file": "slow",
    "test_rough_edges.py::test_config_file_that_is_not_a_mapping": "slow",
    "test_rough_edges.py::test_ctrl_c_during_a_sweep_is_quiet_and_resumable": "slow",
    "test_rough_edges.py::test_errors_on_stdin_name_stdin": "slow",
    "test_rough_edges.py::test_run_reads_standard_input_and_pipes": "slow",
    "test_rough_edges.py::test_stdin_gzip_and_binary_formats_are_detected": "slow",
    "test_rough_edges.py::test_trace_gen_errors_name_flags": "slow",
    "test_sweep.py::test_dask_local_cluster_gives_the_same_table": "slow",
    "test_trace_fastparse.py::test_scanner_agrees_with_vectorparse_or_declines": "slow",
    "test_trace_fastparse.py::test_scanner_reads_every_good_block": "slow",
    "test_trace_formats.py::test_fast_parser_agrees_with_exact_parser": "slow",
    "test_trace_sim.py::test_address_beyond_capacity_exits_2_or_wraps": "slow",
    "test_trace_sim.py::test_malformed_line_exits_2_naming_file_line_and_text": "slow",
    "test_trace_sim.py::test_skip_bad_lines_counts_them_and_simulates_the_rest": "slow",
    "test_trace_sim.py::test_unreadable_trace_exits_2_with_its_own_message": "slow",
    "test_cache_filter.py::test_the_filter_command_reports_levels_and_writes_stats": "slow",
    "test_cache_filter.py::test_filter_errors_name_the_cause_and_write_nothing": "slow",
    "test_cache_filter.py::test_filtering_a_memory_request_trace_says_what_it_is": "slow",
}


def tier_of(item) -> str:
    """The test's tier: its own marker, else TEST_TIERS, else its file's. Errors name
    the test and where to put it."""
    own = [m.name for m in item.iter_markers() if m.name in TIERS]
    if len(set(own)) > 1:
        raise pytest.UsageError(f"{item.nodeid}: in tiers {', '.join(sorted(set(own)))}; "
                                f"a test is in one tier")
    if own:
        return own[0]
    path = Path(str(item.fspath))
    name = f"{path.name}::{item.originalname}"
    tier = TEST_TIERS.get(name) or FILE_TIERS.get(path.name)
    if tier is None:
        raise pytest.UsageError(
            f"{item.nodeid}: in no test tier; add {path.name!r} to FILE_TIERS in "
            f"tests/conftest.py (or the test to TEST_TIERS): {', '.join(TIERS)}")
    return tier


def _check_tier_tables() -> None:
    """Every test file has a tier, and every TEST_TIERS entry names a test that exists
    (a renamed test would otherwise fall back to its file's tier unnoticed)."""
    here = Path(__file__).resolve().parent
    files = {p.name for p in here.glob("test_*.py")}
    for name in sorted(files - set(FILE_TIERS)):
        raise pytest.UsageError(f"tests/{name}: in no test tier; add it to FILE_TIERS in "
                                f"tests/conftest.py ({', '.join(TIERS)})")
    for name in sorted(set(FILE_TIERS) - files):
        raise pytest.UsageError(f"FILE_TIERS in tests/conftest.py names {name}, which is "
                                f"not a test file")
    for name, tier in {**FILE_TIERS, **TEST_TIERS}.items():
        if tier not in TIERS:
            raise pytest.UsageError(f"tests/conftest.py: {name} in tier {tier!r}, not one "
                                    f"of {', '.join(TIERS)}")
    for name in TEST_TIERS:
        file, test = name.split("::")
        if not re.search(rf"^def {re.escape(test)}\(", (here / file).read_text(), re.M):
            raise pytest.UsageError(f"TEST_TIERS in tests/conftest.py names {name}, which "
                                    f"is not a test (renamed?)")


def pytest_collection_modifyitems(config, items):
    _check_tier_tables()
    for item in items:
        item.add_marker(getattr(pytest.mark, tier_of(item)))


# loop variants a tier may build: none for data, the plain loop (features 0) for engine
_TIER_LOOPS = {"data": (), "engine": (0,)}


@pytest.fixture(autouse=True)
def _tier_builds_only_its_loops(request):
    tier = next(m.name for m in request.node.iter_markers() if m.name in TIERS)
    allowed = _TIER_LOOPS.get(tier)
    if allowed is None:
        yield
        return

    def refuse(features) -> None:
        pytest.fail(f"{request.node.nodeid} is in the {tier} tier but built the engine's "
                    f"loop variant {features}: move it to the tier of what it runs "
                    f"(tests/conftest.py, FILE_TIERS / TEST_TIERS)", pytrace=False)

    module = sys.modules.get("memsim.engine.loop")
    if module is None:
        yield
        # (memsim.engine.loop imported during the test: the variants it built)
        module = sys.modules.get("memsim.engine.loop")
        built = [f for f in getattr(module, "_LOOPS", {}) if f not in allowed]
        if built:
            refuse(built[0])
        return
    loop = module.loop

    def guarded(features=0):
        if features not in allowed:
            refuse(features)
        return loop(features)

    module.loop = guarded
    try:
        yield
    finally:
        module.loop = loop
