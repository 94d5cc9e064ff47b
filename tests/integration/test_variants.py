"""Variants on the user's server: pipeline mode and a new connection per transaction,
interleaved, with money still conserved; think time, an open loop, a plan file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, SCALE, dsn_of, golden_runs, pgknee, pgknee_processes, sql

WORKLOAD = ("--schema", "bench_variants", "--scale", SCALE)


@pytest.mark.slow
@pytest.mark.alone  # pipeline vs normal vs connect per repetition: another test's load skews one step
def test_pipeline_and_connect_variants_interleaved(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "v.db"
    r = pgknee("run", "--dsn", dsn_of(server), *WORKLOAD, "--variant", "normal", "--variant", "pipeline",
               "--variant", "connect", "--clients", "2", "--reps", "2", "--duration", "3s", "--store", str(store),
               "--no-waits", *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    steps = sql(store, "SELECT seq, variant, rep, pipeline, connect_per_txn, status, tps, failed FROM steps "
                       "ORDER BY seq")
    # A B C A B C: interleaved per repetition
    assert [(s[1], s[2]) for s in steps] == [("normal", 1), ("pipeline", 1), ("connect", 1),
                                             ("normal", 2), ("pipeline", 2), ("connect", 2)]
    assert [(s[3], s[4]) for s in steps[:3]] == [(0, 0), (1, 0), (0, 1)]
    assert all(s[5] == "completed" and s[7] == 0 for s in steps)
    tps = {(s[1], s[2]): s[6] for s in steps}
    # pipeline mode raises TPS at low concurrency; a connection per transaction costs a lot of it.
    # Compared within each repetition, as the interleaving intends: the machine drifts between them.
    for rep in (1, 2):
        assert tps[("pipeline", rep)] > tps[("normal", rep)] * 1.1, tps
        assert tps[("connect", rep)] < tps[("normal", rep)] * 0.8, tps
    env = dict(sql(store, "SELECT key, value FROM run_environment"))
    assert env["check.money.ok"] == "true"
    argv = [json.loads(a) for (a,) in sql(store, "SELECT argv_json FROM run_commands WHERE purpose = 'bench'")]
    assert sum("--connect" in a for a in argv) == 2
    assert "Variants side by side" in r.out and "TPS vs normal" in r.out
    row = next(ln for ln in r.out.splitlines() if ln.strip().startswith("pipeline"))
    assert "×" in row and ("beyond noise" in row or "within noise" in row)
    assert "▶ pipeline: x" in r.out and "connect: x0." in r.out
    assert pgknee_processes() == []

    # the same comparison from the store alone (across two runs: test_compare_two_stored_runs)
    cmp = pgknee("compare", "last", "--store", str(store), "--json", str(tmp_path / "c.json"))
    assert cmp.code == 0, cmp.err
    assert "TPS vs normal" in cmp.out and "connect" in cmp.out
    d = json.loads((tmp_path / "c.json").read_text())
    assert [(g["variant"], g["clients"], g["reps"]) for g in d["rows"]] == [
        ("normal", 2, 2), ("pipeline", 2, 2), ("connect", 2, 2)]
    normal, pipeline, connect = d["rows"]
    assert normal["tps_ratio"] is None and pipeline["versus"] == "normal"
    assert pipeline["tps_ratio"]["pairs"] == 2 and pipeline["tps_ratio"]["value"] > 1.1
    assert pipeline["tps_ratio"]["lo95"] < pipeline["tps_ratio"]["value"] < pipeline["tps_ratio"]["hi95"]
    assert connect["tps_ratio"]["value"] < 0.8 and connect["latency_ratio"]["value"] > 1.2
    assert pipeline["tps"]["min"] <= pipeline["tps"]["median"] <= pipeline["tps"]["max"]


def test_compare_two_stored_runs(golden: Path) -> None:
    """Two runs, each on a throwaway embedded cluster of its own, at two data sizes (the golden store)."""
    first, second = golden_runs(golden)
    two = pgknee("compare", first, second, "--store", str(golden))
    assert two.code == 0, two.err
    assert f"A = run {first}" in two.out and f"B = run {second}" in two.out
    assert "workload.users: 1000 vs 2000" in two.out  # different data sizes are called out
    ports = {str(p) for (p,) in sql(golden, "SELECT value FROM run_environment WHERE key = 'target.endpoint'")}
    assert len(ports) == 2  # each cluster had its own port...
    assert "target.endpoint" not in two.out  # ...which is not a difference
    one = pgknee("compare", second, "--store", str(golden))
    assert one.code == 2 and "one variant only" in one.err


def test_think_time_is_paced_and_left_out_of_the_latency(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "t.db"
    r = pgknee("run", "--dsn", dsn_of(server), *WORKLOAD, "--variant", "name=think:think=20ms",
               "--clients", "2", "--duration", "3s", "--store", str(store), "--quiet", "--json",
               str(tmp_path / "t.json"), *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    steps = {s[0]: s[1:] for s in sql(store, "SELECT variant, think_ms, tps, lat_avg_ms, lat_avg_pgbench_ms "
                                             "FROM steps")}
    think_ms, tps, lat, lat_pgbench = steps["think"]
    assert think_ms == 20.0
    # two clients, each 20 ms thinking + a few ms working: at most 100 transactions a second
    assert 50 < tps < 100, tps
    assert lat < 10 and lat_pgbench > 20  # pgbench counts the pause; pgknee takes it out
    assert abs(lat_pgbench - lat - 20) < 1.5, (lat, lat_pgbench)
    checks = json.loads((tmp_path / "t.json").read_text())["summary"][0]["checks"]
    little = next(c for c in checks if c["name"] == "littles-law")
    assert little["status"] == "ok" and "20 ms think" in little["detail"], little
    assert "think time 20 ms after each transaction (not in the latency figures)" in " ".join(r.out.split())
    argv = [json.loads(a) for (a,) in sql(store, "SELECT argv_json FROM run_commands WHERE purpose = 'bench'")]
    assert len(argv) == 1


def test_pipeline_with_simple_protocol_is_refused_before_anything_runs(tmp_path: Path) -> None:
    r = pgknee("run", "--variant", "pipeline", "--protocol", "simple", "--store", str(tmp_path / "x.db"),
               cwd=tmp_path)
    assert r.code == 2 and "pipeline mode needs the extended or prepared protocol" in r.err
    assert r.err.count("\n") == 1 and not (tmp_path / "x.db").exists()


def test_dry_run_prints_the_command_lines_and_runs_nothing(tmp_path: Path) -> None:
    r = pgknee("run", "--dry-run", "--variant", "normal", "--variant", "connect", "--clients", "2,4", "--reps", "2",
               "--duration", "30s", "--store", str(tmp_path / "d.db"), cwd=tmp_path)
    assert r.code == 0, r.err
    steps = [ln for ln in r.out.splitlines() if ln.startswith("step ")]
    assert len(steps) == 8
    assert steps[1].startswith("step 2/8 c2 rep 1 connect:") and "--connect" in steps[1]
    assert "--connect" not in steps[0] and "--client=4" in steps[4]
    assert "estimated wall time: 4 min" in r.out  # 8 x (30 + 4) s + setup
    assert not (tmp_path / "d.db").exists()
    assert pgknee_processes() == []


def test_a_plan_file_runs_and_travels_with_the_run(server: EmbeddedCluster, tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('description = "tiny"\n[workload]\nscale = 0.1\nschema = "bench_variants"\n[sweep]\n'
                    'clients = [2]\nduration = "1s"\nvariants = ["normal", "name=pipe:pipeline:extended"]\n'
                    '[collect]\npre = "0.2s"\npost = "300ms"\nsettle = "1s"\nidle_flush = "1s"\n'
                    'log_sampling_rate = 1\n')
    store = tmp_path / "p.db"
    r = pgknee("run", str(plan), "--dsn", dsn_of(server), "--reps", "1", "--store", str(store), "--quiet",
               "--no-waits", env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    assert sql(store, "SELECT variant, protocol, pipeline FROM steps ORDER BY seq") == [
        ("normal", "prepared", 0), ("pipe", "extended", 1)]
    env = dict(sql(store, "SELECT key, value FROM run_environment"))
    assert env["plan.source"] == plan.read_text() and env["plan.file"] == str(plan)
    stored = json.loads(str(sql(store, "SELECT plan_json FROM runs")[0][0]))
    assert (stored["pre_s"], stored["post_s"], stored["settle_s"], stored["idle_flush_s"],
            stored["log_sampling_rate"]) == (0.2, 0.3, 1, 1, 1)
    scen = pgknee("scenarios")
    assert scen.code == 0 and "ewallet-pipeline" in scen.out and "connect-overhead" in scen.out


def test_open_loop_variant_reports_schedule_lag(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "o.db"
    r = pgknee("run", "--dsn", dsn_of(server), *WORKLOAD, "--variant", "rate=300", "--clients", "4", "--duration",
               "3s", "--store", str(store), "--no-waits", *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    rate, tps, lag_avg, lag_p99, lat = sql(store, "SELECT rate, tps, lag_avg_ms, lag_p99_ms, lat_avg_ms FROM steps")[0]
    assert rate == 300 and abs(tps - 300) / 300 < 0.2  # the schedule, not the server, sets the pace
    assert 0 <= lag_avg <= lag_p99 and lat > 0
    assert "Schedule lag avg (ms)" in r.out
    argv = sql(store, "SELECT argv_json FROM run_commands WHERE purpose = 'bench'")[0][0]
    assert "--rate=300" in argv
