"""Sweeps: spec validation, grid expansion, parallel execution (local processes and a
real Dask LocalCluster), resume, failure recording, CLI wiring."""

from __future__ import annotations

import argparse
import json
import math

import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from memsim import sweep
from memsim.results import HOST_METRICS
from memsim.sweep import SpecError, expand_grid, load_results, load_spec, run_sweep
from memsim.trace import generate, write_trace

HOST_COLUMNS = list(HOST_METRICS)


def _write_trace(path, seed, n=300, footprint=1 << 30):
    cycle, is_write, addr = generate("random", n, seed=seed, write_ratio=0.3,
                                     footprint_bytes=footprint)
    write_trace(path, cycle, is_write, addr)
    return path


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    return {
        "a": _write_trace(d / "a.trace", seed=1),
        "b": _write_trace(d / "b.trace", seed=2),
        # addresses up to 8 GiB: fits an 8 Gb x8 rank, not a 4 Gb one
        "big": _write_trace(d / "big.trace", seed=3, footprint=8 << 30),
    }


def _spec(traces, **kw):
    spec = {"name": "t", "traces": [str(traces["a"]), str(traces["b"])],
            "grid": {"controller.scheduler": ["fcfs", "frfcfs"],
                     "controller.read_queue": [8, 32]}}
    spec.update(kw)
    return spec


@pytest.fixture(scope="module")
def local_sweep(traces, tmp_path_factory):
    """One 4-point x 2-trace sweep with 2 worker processes, shared by several tests."""
    out = tmp_path_factory.mktemp("local")
    df = run_sweep(_spec(traces), out, jobs=2, backend="local", progress=False)
    return out, df


# ---------------------------------------------------------------- spec validation

def test_unknown_top_level_key_is_named(traces):
    with pytest.raises(SpecError, match="unknown key 'gird'"):
        load_spec({"traces": [str(traces["a"])], "gird": {}})


def test_grid_value_must_be_a_list(traces):
    with pytest.raises(SpecError, match=r"grid\.controller\.read_queue: expected a list"):
        load_spec({"traces": [str(traces["a"])], "grid": {"controller.read_queue": 16}})
    with pytest.raises(SpecError, match=r"grid\.controller\.read_queue: the list .* empty"):
        load_spec({"traces": [str(traces["a"])], "grid": {"controller.read_queue": []}})


def test_unknown_config_key_in_grid_is_named(traces):
    with pytest.raises(SpecError, match=r"grid\.controller\.read_queues: unknown config key"):
        load_spec({"traces": [str(traces["a"])],
                   "grid": {"controller.read_queues": [16, 32]}})
    with pytest.raises(SpecError, match=r"grid\.ctrl\.scheduler: unknown config key"):
        load_spec({"traces": [str(traces["a"])], "grid": {"ctrl.scheduler": ["fcfs"]}})


def test_unknown_key_in_point_names_the_point(traces):
    with pytest.raises(SpecError, match=r"points\[1\]\.dram\.sped: unknown config key"):
        load_spec({"traces": [str(traces["a"])],
                   "points": [{"dram.speed": "DDR4_2400R"}, {"dram.sped": "DDR4_3200AA"}]})


def test_bad_value_names_point_and_key_before_anything_runs(traces, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(sweep.jobs, "run_job", lambda job: calls.append(job))
    spec = _spec(traces, points=[{"controller.scheduler": "fifo"}])
    spec["grid"]["controller.read_queue"] = [8, 0]
    with pytest.raises(SpecError) as e:
        run_sweep(spec, tmp_path / "out", jobs=1, progress=False)
    msg = str(e.value)
    assert "grid point 1 (controller.scheduler=fcfs, controller.read_queue=0): " \
           "controller.read_queue: 0 is below the minimum 1" in msg
    assert "points[0] (controller.scheduler=fifo): controller.scheduler: 'fifo' is not " \
           "one of" in msg
    assert "3 of 5 points" in msg
    assert calls == []
    assert not (tmp_path / "out").exists()


def test_other_spec_errors(traces):
    a = str(traces["a"])
    with pytest.raises(SpecError, match="traces: required"):
        load_spec({"grid": {"controller.scheduler": ["fcfs"]}})
    with pytest.raises(SpecError, match=r"grid\.controller\.scheduler: also set in overrides"):
        load_spec({"traces": [a], "overrides": {"controller.scheduler": "fcfs"},
                   "grid": {"controller.scheduler": ["fcfs", "frfcfs"]}})
    with pytest.raises(SpecError, match=r"points\[0\]: expected a non-empty mapping"):
        load_spec({"traces": [a], "points": ["controller.scheduler=fcfs"]})
    with pytest.raises(SpecError, match=r"grid\.controller: a whole section cannot be swept"):
        load_spec({"traces": [a], "grid": {"controller": {"scheduler": ["fcfs"]}}})
    with pytest.raises(SpecError, match=r"grid\.dram\.timing: expected a list of values, got "
                                        r"a mapping \(use dotted keys"):
        load_spec({"traces": [a], "grid": {"dram.timing": {"tRTRS": [1, 2]}}})
    with pytest.raises(SpecError, match=r"base: config file 'nope\.yaml' not found"):
        load_spec({"traces": [a], "base": "nope.yaml"})
    with pytest.raises(SpecError, match="traces"):
        load_spec({"traces": "/nonexistent/*.trace"})


def test_spec_file_paths_are_relative_to_the_spec(traces, tmp_path, monkeypatch):
    d = tmp_path / "specs"
    d.mkdir()
    (d / "base.yaml").write_text("dram: {speed: DDR4_3200AA}\ncontroller: {read_queue: 48}\n")
    (d / "local.trace").write_bytes(traces["a"].read_bytes())
    (d / "s.yaml").write_text(yaml.safe_dump({
        "base": "base.yaml", "traces": ["local.trace"],
        "overrides": ["controller.write_queue=16"],
        "grid": {"controller.scheduler": ["fcfs", "frfcfs"]}}))
    monkeypatch.chdir(tmp_path)
    s = load_spec(d / "s.yaml")
    assert s.name == "s"
    assert [t.path for t in s.traces] == [d / "local.trace"]
    assert [p.config["dram"]["speed"] for p in s.points] == ["DDR4_3200AA"] * 2
    assert [p.config["controller"]["read_queue"] for p in s.points] == [48, 48]
    assert [p.config["controller"]["write_queue"] for p in s.points] == [16, 16]


# ---------------------------------------------------------------- grid expansion

def test_grid_expansion_and_explicit_points(traces):
    s = load_spec({
        "traces": [str(traces["a"]), str(traces["b"])],
        "grid": {"controller.scheduler": ["fcfs", "frfcfs", "frfcfs_cap"],
                 "dram.speed": ["DDR4_2400R", "DDR4_3200AA"]},
        "points": [{"controller.scheduler": "frfcfs", "controller.page_policy": "closed"},
                   {"controller.scheduler": "fcfs", "dram.speed": "DDR4_2400R"}],  # dup
    })
    assert len(s.points) == 3 * 2 + 1  # the duplicate of grid point 0 runs once
    assert s.params == ["controller.scheduler", "dram.speed", "controller.page_policy"]
    assert [p.values for p in s.points[:2]] == [
        {"controller.scheduler": "fcfs", "dram.speed": "DDR4_2400R"},
        {"controller.scheduler": "fcfs", "dram.speed": "DDR4_3200AA"}]
    assert s.points[-1].config["controller"]["page_policy"] == "closed"
    assert s.points[-1].config["dram"]["speed"] == "DDR4_2400R"  # from the base
    jobs = sweep.plan(s)
    assert len(jobs) == 7 * 2
    assert len({j.key for j in jobs}) == 14


def test_no_grid_means_one_point(traces):
    s = load_spec({"traces": str(traces["a"]), "base": "ddr4_3200_x8_2ch2r"})
    assert len(s.points) == 1
    assert s.points[0].config["name"] == "ddr4_3200_x8_2ch2r"


@given(st.lists(st.integers(1, 4), min_size=0, max_size=4))
def test_grid_size_is_the_product(sizes):
    grid = {f"k{i}": list(range(n)) for i, n in enumerate(sizes)}
    points = expand_grid(grid)
    assert len(points) == (math.prod(sizes) if sizes else 0)
    assert len({tuple(p.items()) for p in points}) == len(points)


def test_job_key_depends_on_config_and_trace_content(traces, tmp_path):
    s = load_spec(_spec(traces))
    keys = {j.key for j in sweep.plan(s)}
    assert len(keys) == 8
    # same content under the same name -> same key; different content -> different key
    again = {j.key for j in sweep.plan(load_spec(_spec(traces)))}
    assert again == keys


# ---------------------------------------------------------------- running

def test_local_sweep_table(local_sweep, traces):
    out, df = local_sweep
    assert len(df) == 4 * 2
    assert list(df.columns[:7]) == ["point", "trace", "label", "controller.scheduler",
                                    "controller.read_queue", "status", "error"]
    for col in ("key", "bandwidth_gbps.total", "latency_ns.read.p99",
                "turnaround.write_to_read.idle_cycles", "row_buffer.hit_rate",
                "config.controller.scheduler", "trace.sha256"):
        assert col in df.columns, col
    assert (df["status"] == "ok").all()
    assert df["error"].isna().all()
    assert df["point"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert df["trace"].tolist() == [str(traces["a"]), str(traces["b"])] * 4
    assert df["label"].tolist()[::2] == ["fcfs, read_queue=8", "fcfs, read_queue=32",
                                         "frfcfs, read_queue=8", "frfcfs, read_queue=32"]
    assert (df["controller.scheduler"] == df["config.controller.scheduler"]).all()
    assert (df["requests.total"] == 300).all()
    assert (df["bandwidth_gbps.total"] > 0).all()
    # the files: table twice, one JSON per run, nothing half-written
    pq = pd.read_parquet(out / "results.parquet")
    csv = pd.read_csv(out / "results.csv")
    assert len(pq) == len(csv) == 8
    pd.testing.assert_frame_equal(load_results(out), pq)
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == sorted(f"{k}.json" for k in df["key"])
    data = json.loads((out / "runs" / runs[0]).read_text())
    assert set(data["latency_histogram_cycles"]) == {"read", "write"}
    assert data["sweep"]["key"] == runs[0][:-5]
    manifest = json.loads((out / "sweep.json").read_text())
    assert manifest["params"] == ["controller.scheduler", "controller.read_queue"]


def test_local_matches_a_single_run(local_sweep, traces):
    from memsim import sim

    _, df = local_sweep
    row = df[(df["label"] == "frfcfs, read_queue=8") & (df["trace"] == str(traces["b"]))]
    r = sim.run(traces["b"], None, ["controller.scheduler=frfcfs",
                                    "controller.read_queue=8"]).summary()
    assert row["cycles"].item() == r["cycles"]
    assert row["bandwidth_gbps.total"].item() == pytest.approx(r["bandwidth_gbps"]["total"])
    assert row["latency_cycles.read.p99"].item() == r["latency_cycles"]["read"]["p99"]


def test_resume_skips_finished_runs(local_sweep, traces, tmp_path, monkeypatch):
    import shutil

    src, first = local_sweep
    out = tmp_path / "copy"
    shutil.copytree(src, out)
    mtimes = {p: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    calls = []
    real = sweep.run_job

    def counting(job):
        calls.append(job.key)
        return real(job)

    monkeypatch.setattr(sweep.jobs, "run_job", counting)
    df = run_sweep(_spec(traces), out, jobs=1, progress=False)
    assert calls == []
    assert df.attrs["reused"] == 8
    assert {p: p.stat().st_mtime_ns for p in (out / "runs").iterdir()} == mtimes
    cols = [c for c in first.columns if c not in HOST_COLUMNS]
    pd.testing.assert_frame_equal(df[cols], first[cols])

    # a lost (or never finished) run is run again, and only that one
    victim = first["key"].iloc[3]
    (out / "runs" / f"{victim}.json").unlink()
    df = run_sweep(_spec(traces), out, jobs=1, progress=False)
    assert calls == [victim]
    assert (df["status"] == "ok").all()


def test_missing_trace_is_a_spec_error_before_anything_runs(traces, tmp_path):
    spec = {"traces": [str(traces["big"]), str(tmp_path / "missing.trace")],
            "grid": {"dram.density_gbit": [4, 8]}}
    with pytest.raises(SpecError, match=r"^traces\[1\]: '.*missing\.trace' not found "
                                        r"\(no such file\)$"):
        run_sweep(spec, tmp_path / "out", jobs=1, progress=False)
    assert not (tmp_path / "out").exists()
    with pytest.raises(SpecError, match=r"^traces\[0\]: 'nope\.trace' not found \(looked in "):
        load_spec({"traces": ["nope.trace"]})
    with pytest.raises(SpecError, match=r"^traces\[0\]: .* is not a regular file$"):
        load_spec({"traces": [str(tmp_path)]})


def test_failing_jobs_are_recorded_and_others_complete(traces, tmp_path):
    spec = {"traces": [str(traces["big"]), str(traces["a"])],
            "grid": {"dram.density_gbit": [4, 8]}}
    out = tmp_path / "out"
    df = run_sweep(spec, out, jobs=2, progress=False)
    assert len(df) == 4
    by = {(r["dram.density_gbit"], r["trace"].rsplit("/", 1)[-1]): r for _, r in df.iterrows()}
    for key in ((8, "big.trace"), (4, "a.trace"), (8, "a.trace")):
        assert by[key]["status"] == "ok" and by[key]["bandwidth_gbps.total"] > 0
    small = by[(4, "big.trace")]
    assert small["status"] == "failed"
    assert "AddressError" in small["error"] and "capacity" in small["error"]
    assert math.isnan(small["bandwidth_gbps.total"])
    failed = df[df["status"] == "failed"]
    for key in failed["key"]:
        record = json.loads((out / "runs" / f"{key}.error.json").read_text())
        assert record["error"] and "Traceback" in record["traceback"]
        assert not (out / "runs" / f"{key}.json").exists()
    assert len(pd.read_parquet(out / "results.parquet")) == 4
    # failed runs are retried on resume; the good ones are reused
    df2 = run_sweep(spec, out, jobs=1, progress=False)
    assert df2.attrs["reused"] == 3
    assert (df2["status"] == "failed").sum() == 1


def _parser():
    p = argparse.ArgumentParser(prog="memsim")
    sub = p.add_subparsers(dest="command", required=True)
    sweep.add_sweep_parser(sub)
    return p


def test_cli_exit_codes_and_dry_run(traces, tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({"traces": [str(traces["a"]), str(traces["big"])],
                                    "grid": {"controller.scheduler": ["fcfs", "frfcfs"]},
                                    "overrides": {"dram.density_gbit": 4}}))
    args = _parser().parse_args(["sweep", str(spec), "-o", str(tmp_path / "o"),
                                 "--dry-run"])
    assert args.func(args) == 0
    assert "2 points x 2 traces = 4 runs (0 already" in capsys.readouterr().out
    args = _parser().parse_args(["sweep", str(spec), "-o", str(tmp_path / "o"), "-j", "1",
                                 "--no-progress"])
    assert args.func(args) == 1
    captured = capsys.readouterr()
    assert "4 runs (4 run now, 0 reused, 2 failed)" in captured.out
    assert f"failed: fcfs on {traces['big']}: AddressError" in captured.err

    spec.write_text(yaml.safe_dump({"traces": [str(traces["a"])],
                                    "grid": {"controller.scheduler": ["fcfs", "frfcfs"]},
                                    "overrides": {"dram.density_gbit": 4}}))
    args = _parser().parse_args(["sweep", str(spec), "-o", str(tmp_path / "o"), "-j", "1",
                                 "--no-progress"])
    assert args.func(args) == 0
    assert "2 runs (0 run now, 2 reused, 0 failed)" in capsys.readouterr().out


def test_bad_arguments(traces, tmp_path):
    with pytest.raises(ValueError, match="backend"):
        run_sweep(_spec(traces), tmp_path, backend="slurm")
    with pytest.raises(ValueError, match="jobs"):
        run_sweep(_spec(traces), tmp_path, jobs=0)
    with pytest.raises(ValueError, match="scheduler_address needs backend='dask'"):
        run_sweep(_spec(traces), tmp_path, scheduler_address="tcp://127.0.0.1:1")
    with pytest.raises(FileNotFoundError, match="no such results directory"):
        load_results(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError, match="no sweep results here"):
        load_results(tmp_path)


def test_dask_local_cluster_gives_the_same_table(local_sweep, traces, tmp_path):
    _, local = local_sweep
    df = run_sweep(_spec(traces), tmp_path / "dask", jobs=2, backend="dask", progress=False)
    cols = [c for c in local.columns if c not in HOST_COLUMNS]
    assert sorted(df.columns) == sorted(local.columns)
    pd.testing.assert_frame_equal(df[cols], local[cols])
    assert len(list((tmp_path / "dask" / "runs").glob("*.json"))) == 8


def test_a_cluster_sharing_a_compile_cache_compiles_each_variant_once(traces, tmp_path):
    """Two Dask worker processes with an empty cache directory they share: of the runs
    (one loop variant), one compiles it, the others wait for that compile (the lock in
    the cache directory) and load it."""
    import json
    import logging

    from dask.distributed import LocalCluster

    cache = tmp_path / "shared-cache"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        df = run_sweep(_spec(traces), tmp_path / "out", backend="dask", progress=False,
                       scheduler_address=cluster.scheduler_address, compile_cache=cache)
    assert (df["status"] == "ok").all() and len(df) == 8
    compiled = [json.loads(p.read_text())["jit_compiled"]
                for p in (tmp_path / "out" / "runs").glob("*.json")]
    assert sorted(compiled) == [False] * 7 + [True]
    assert list(cache.rglob("loop.make_loop.locals.run_chunk-*.nbi"))


def test_docs_sweep_spec_example_is_valid_and_every_key_is_documented(tmp_path,
                                                                       monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "sweep-spec.md").read_text()
    example = doc.split("```yaml\n")[1].split("```")[0]
    spec = tmp_path / "queues.yaml"
    spec.write_text(example)
    monkeypatch.chdir(root)  # the example's trace path is relative to the checkout
    sw = load_spec(spec)
    assert sw.name == "queues" and len(sw.traces) == 1
    assert len(sw.points) == 7  # 2 x 3 grid points + 1 extra point, as the doc says
    assert [p.origin for p in sw.points][-1] == "points[0]"
    assert len(sweep.plan(sw)) == 7
    for key in sweep.SPEC_KEYS:
        assert f"| `{key}` |" in doc, key


# ---------------------------------------------------------------- several bases, named variants

def test_a_list_of_bases_is_compared_and_labels_name_them(traces, tmp_path):
    fast = tmp_path / "fast.yaml"
    fast.write_text("dram: {speed: DDR4_3200AA}\n")
    s = load_spec({"traces": [str(traces["a"])], "base": ["ddr4_2400_x8_1ch1r", str(fast)],
                   "grid": {"controller.read_queue": [8, 32]}})
    assert s.params == ["base", "controller.read_queue"]
    assert [p.origin for p in s.points] == ["base[0] grid point 0", "base[0] grid point 1",
                                            "base[1] grid point 0", "base[1] grid point 1"]
    assert [p.tags for p in s.points] == [{"base": "ddr4_2400_x8_1ch1r"}] * 2 + [
        {"base": "fast"}] * 2
    assert [p.config["dram"]["speed"] for p in s.points] == ["DDR4_2400R"] * 2 + [
        "DDR4_3200AA"] * 2
    from memsim.sweep.spec import labels

    assert list(labels(s.points, s.params).values()) == [
        "ddr4_2400_x8_1ch1r, read_queue=8", "ddr4_2400_x8_1ch1r, read_queue=32",
        "fast, read_queue=8", "fast, read_queue=32"]


def test_named_variants_stand_for_their_settings(traces):
    s = load_spec({"traces": [str(traces["a"])],
                   "grid": {"controller.read_queue": [8, 32]},
                   "variants": {"plain": {}, "fast": {"dram.speed": "DDR4_3200AA",
                                                      "controller.write_queue": 16}}})
    assert s.params == ["variant", "controller.read_queue"]
    assert [p.origin for p in s.points] == [
        "grid point 0 variant plain", "grid point 0 variant fast",
        "grid point 1 variant plain", "grid point 1 variant fast"]
    assert [p.tags for p in s.points] == [{"variant": "plain"}, {"variant": "fast"}] * 2
    assert s.points[1].config["controller"]["write_queue"] == 16
    from memsim.sweep.spec import labels

    assert list(labels(s.points, s.params).values()) == [
        "plain, read_queue=8", "fast, read_queue=8", "plain, read_queue=32",
        "fast, read_queue=32"]


def test_spec_errors_of_bases_and_named_variants(traces):
    a = str(traces["a"])
    with pytest.raises(SpecError, match=r"^base: expected a config or a non-empty list"):
        load_spec({"traces": [a], "base": []})
    with pytest.raises(SpecError, match="^base: listed more than once: ddr4_2400_x8_1ch1r$"):
        load_spec({"traces": [a], "base": ["ddr4_2400_x8_1ch1r", "ddr4_2400_x8_1ch1r"]})
    with pytest.raises(SpecError, match=r"^base\[1\]: config file 'no\.yaml' not found"):
        load_spec({"traces": [a], "base": ["ddr4_2400_x8_1ch1r", "no.yaml"]})
    with pytest.raises(SpecError, match=r"^variants\.fast: expected a mapping of dotted"):
        load_spec({"traces": [a], "variants": {"fast": "dram.speed=DDR4_3200AA"}})
    with pytest.raises(SpecError, match=r"^variants\.fast\.dram\.sped: unknown config key"):
        load_spec({"traces": [a], "variants": {"fast": {"dram.sped": "DDR4_3200AA"}}})
    with pytest.raises(SpecError) as e:
        load_spec({"traces": [a], "base": ["ddr4_2400_x8_1ch1r", "ddr4_3200_x8_2ch2r"],
                   "variants": {"bad": {"controller.read_queue": 0}}})
    assert str(e.value) == (
        "spec: 2 of 2 points have an invalid config:\n"
        "  base[0] variants.bad (controller.read_queue=0): controller.read_queue: 0 is "
        "below the minimum 1\n"
        "  base[1] variants.bad (controller.read_queue=0): controller.read_queue: 0 is "
        "below the minimum 1")
