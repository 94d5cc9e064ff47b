from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from builders import make_run_data, os_sample, step, with_run

from pgknee.analyze import checks as ck
from pgknee.analyze.run import build
from pgknee.analyze.summary import latency_stats, median, pct_change
from pgknee.analyze.view import Spread
from pgknee.analyze.waits import article_aas, relative_error, total_aas, wait_profile
from pgknee.model.keys import CheckId
from pgknee.model.results import LatencyStats, RunData, WaitRow
from pgknee.model.rules import spread_pct
from pgknee.plan import Plan

# ---- summary --------------------------------------------------------------------------------------


def test_latency_stats_known_array() -> None:
    s = latency_stats(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]))
    assert s is not None
    assert s.count == 10
    assert s.mean_ms == pytest.approx(5.5)
    assert s.stddev_ms == pytest.approx(math.sqrt(82.5 / 9))  # sample stddev
    assert (s.min_ms, s.max_ms) == (1.0, 10.0)
    assert s.p50_ms == pytest.approx(5.5)
    assert s.p95_ms == pytest.approx(9.55)  # rank 8.55 -> 9 + 0.55
    assert s.p99_ms == pytest.approx(9.91)


def test_latency_stats_unsorted_input() -> None:
    s = latency_stats(np.array([30.0, 10.0, 20.0]))
    assert s == LatencyStats(count=3, mean_ms=20.0, stddev_ms=10.0, min_ms=10.0, p50_ms=20.0,
                             p95_ms=pytest.approx(29.0), p99_ms=pytest.approx(29.8), max_ms=30.0)


def test_latency_stats_empty_and_single() -> None:
    assert latency_stats(np.array([])) is None
    s = latency_stats(np.array([7.25]))
    assert s == LatencyStats(1, 7.25, 0.0, 7.25, 7.25, 7.25, 7.25, 7.25)


@pytest.mark.parametrize(("values", "expected"), [
    ([100.0, 100.0], 0.0),
    ([180.0, 220.0], 20.0),  # 40 / median 200
    ([90.0, 100.0, 110.0], 20.0),
    ([5.0], 0.0),
    ([], 0.0),
    ([0.0, 0.0], 0.0),  # no division by zero
])
def test_spread_pct(values: list[float], expected: float) -> None:
    assert spread_pct(values) == pytest.approx(expected)


def test_pct_change_and_median() -> None:
    assert pct_change(200.0, 100.0) == pytest.approx(100.0)
    assert pct_change(50.0, 100.0) == pytest.approx(-50.0)
    assert pct_change(5.0, 0.0) is None
    assert median([3.0, 1.0, 2.0, 10.0]) == 2.5


# ---- waits ----------------------------------------------------------------------------------------


def test_wait_profile_divides_by_all_snapshots() -> None:
    rows = wait_profile([("Lock", "transactionid", 5), ("CPU", "running", 30), ("LWLock", "WALWrite", 5)], 20)
    assert [(r.wait_event_type, r.wait_event, r.count) for r in rows] == [
        ("CPU", "running", 30), ("LWLock", "WALWrite", 5), ("Lock", "transactionid", 5)]  # count desc, then name
    assert [r.aas for r in rows] == [1.5, 0.25, 0.25]
    assert total_aas(rows) == pytest.approx(2.0)
    assert total_aas(rows) == pytest.approx(sum(r.count for r in rows) / 20)  # per-event AAS adds up


@pytest.mark.parametrize("snapshots", [0, -1])
def test_wait_profile_no_snapshots(snapshots: int) -> None:
    assert wait_profile([("CPU", "running", 3)], snapshots) == []
    assert total_aas([]) == 0


def test_relative_error() -> None:
    assert relative_error(WaitRow("CPU", "running", 100, 1.0)) == pytest.approx(0.1)
    assert relative_error(WaitRow("CPU", "running", 4, 1.0)) == pytest.approx(0.5)
    assert relative_error(WaitRow("CPU", "running", 0, 0.0)) == math.inf


def test_article_aas_overstates_rare_events() -> None:
    # 100 snapshots; a lock wait seen 6 times, in 3 of them (2 sessions at a time)
    correct = wait_profile([("Lock", "tuple", 6)], 100)[0].aas
    assert correct == pytest.approx(0.06)
    assert article_aas(6, 3) == pytest.approx(2.0)
    assert article_aas(6, 3) > 30 * correct
    # they agree only when the event is in every snapshot
    assert article_aas(150, 100) == wait_profile([("CPU", "running", 150)], 100)[0].aas
    assert article_aas(5, 0) == 0.0


# ---- checks ---------------------------------------------------------------------------------------


def test_tps_vs_pgbench() -> None:
    assert ck.tps_vs_pgbench(step(tps=100.0, tps_pgbench=101.0)).status == "ok"
    c = ck.tps_vs_pgbench(step(tps=110.0, tps_pgbench=100.0))
    assert c.status == "warn" and c.detail == "log 110.0 vs pgbench 100.0 tps (+10.0%)"
    assert c.id is CheckId.TPS_VS_PGBENCH and c.value == pytest.approx(10.0) and c.unit is ck.CheckUnit.DEVIATION_PCT
    assert ck.tps_vs_pgbench(step(tps=103.0, tps_pgbench=100.0)).status == "ok"  # tolerance 3 % inclusive
    na = ck.tps_vs_pgbench(step(tps_pgbench=None))
    assert na.status == "n/a" and na.value is None and na.unit is None
    assert ck.tps_vs_pgbench(step(tps=None)).status == "n/a"


def test_tps_vs_database() -> None:
    assert ck.tps_vs_database(step(tps=100.0, tps_db=104.0)).status == "ok"
    c = ck.tps_vs_database(step(tps=100.0, tps_db=90.2))  # 2 clients started in the 10 s: 0.2 commits/s
    assert c.status == "warn" and "pg_stat_database 90.0 commits/s (less 2 session starts)" in c.detail
    assert "(-10.0%)" in c.detail and c.value == pytest.approx(-10.0)
    assert ck.tps_vs_database(step(tps_db=None)).status == "n/a"
    # 1,000 clients connecting add 1,000 commits (measured 1,013): over a 10 s window, 100 commits/s
    assert ck.tps_vs_database(step(clients=1000, tps=100.0, tps_db=200.0)).status == "ok"
    pooled = step(clients=1000, tps=100.0, tps_db=200.0, pooler_kind="managed", pool_size=20)
    assert ck.tps_vs_database(pooled).status == "warn"  # only the pool's 20 sessions started
    # the reserve pool counts (rules.database_concurrency): 20 + 980 sessions started, 100 commits/s
    reserved = ck.tps_vs_database(replace(pooled, pool_reserve=980))
    assert reserved.status == "ok" and "(less 1000 session starts)" in reserved.detail


def test_tps_vs_database_takes_out_autovacuum_and_pgpool() -> None:
    # 2 sessions and 60 tables autovacuum vacuumed or analyzed (1.5 commits each) over 10 s: 9.2 commits/s
    plain = step(clients=2, tps=100.0, tps_db=109.2)
    assert ck.tps_vs_database(plain).status == "warn"  # +9.0% when autovacuum's commits count as the workload's
    c = ck.tps_vs_database(plain, maintenance=60.0)
    assert c.status == "ok" and c.value == pytest.approx(0.0, abs=1e-9)
    assert "(less 2 session starts, ~90 of autovacuum's on 60 tables)" in c.detail
    # through pgpool-II, each of the 8 server sessions also answers its SELECT version(), and each of
    # the 8 clients' logouts is reset with DISCARD ALL: 24 commits over 10 s
    pgp = step(clients=8, tps=100.0, tps_db=102.4, pooler_kind="pgpool", pool_size=8)
    c = ck.tps_vs_database(pgp)
    assert c.value == pytest.approx(0.0, abs=1e-9)
    assert "8 session starts, pgpool's 8 version() queries and 8 resets" in c.detail
    # through pgbouncer neither: the same figures are 1.6% over
    assert ck.tps_vs_database(replace(pgp, pooler_kind="managed")).value == pytest.approx(1.6)


def test_littles_law() -> None:
    c = ck.littles_law(step(clients=8, tps=400.0, lat_avg_ms=20.0))
    assert c.status == "ok" and c.detail == "TPS x latency = 8.00 busy clients of 8 (+0.0%)"
    # half the clients' time is spent outside the measured transactions
    c = ck.littles_law(step(clients=8, tps=200.0, lat_avg_ms=20.0))
    assert c.status == "warn" and "4.00 busy clients of 8 (-50.0%)" in c.detail
    # failed transactions keep clients busy too: (360 + 400 / 10) x 20 ms = 8
    assert ck.littles_law(step(clients=8, tps=360.0, failed=400, duration_s=10.0, lat_avg_ms=20.0)).status == "ok"
    assert ck.littles_law(step(tps=0.0)).status == "n/a"


def test_littles_law_counts_the_think_time_as_the_clients_own() -> None:
    """8 clients each 2 ms in a transaction and 18 ms thinking: 400 TPS keeps all 8 busy
    with the cycle, 0.8 of them in a transaction at a time."""
    c = ck.littles_law(step(clients=8, tps=400.0, lat_avg_ms=2.0, think_ms=18.0))
    assert c.status == "ok" and "= 8.00 of 8 clients (+0.0%)" in c.detail and "0.80 in a transaction" in c.detail
    assert ck.littles_law(step(clients=8, tps=400.0, lat_avg_ms=2.0)).status == "warn"
    assert ck.littles_law(step(lat_avg_ms=None)).status == "n/a"


def test_sampled_vs_active_time() -> None:
    s = step(bench_start=100.0, bench_end=110.0)
    ok = ck.sampled_vs_active_time(s, 2.0, 100, 20000.0)  # 20 s of active time in 10 s = AAS 2
    assert ok.status == "ok" and "+0.0%" in ok.detail
    warn = ck.sampled_vs_active_time(s, 4.0, 1000, 20000.0)
    assert warn.status == "warn" and "+100.0%" in warn.detail
    assert ck.sampled_vs_active_time(s, None, 0, 20000.0).status == "n/a"
    assert ck.sampled_vs_active_time(s, 1.0, 0, 20000.0).status == "n/a"
    na = ck.sampled_vs_active_time(s, 1.0, 10, None)
    assert na.status == "n/a" and "PostgreSQL < 14" in na.detail
    assert ck.sampled_vs_active_time(step(bench_end=None), 1.0, 10, 1.0).status == "n/a"


def test_sampled_vs_active_time_tolerance_grows_with_few_samples() -> None:
    s = step(bench_start=0.0, bench_end=10.0)
    # truth 0.1 x 10 snapshots = 1 expected occurrence: tolerance 300 %, so +200 % is ok
    c = ck.sampled_vs_active_time(s, 0.3, 10, 1000.0)
    assert c.status == "ok" and "tolerance 300%" in c.detail


def test_client_cpu() -> None:
    ok = ck.client_cpu(step(threads=2), [os_sample(client_cpu_pct=40.0), os_sample(client_cpu_pct=60.0)])
    assert ok.status == "ok" and "50%" in ok.detail and "25% of their capacity" in ok.detail
    assert ok.value == 25.0 and ok.unit is ck.CheckUnit.CAPACITY_PCT
    warn = ck.client_cpu(step(threads=2), [os_sample(client_cpu_pct=190.0)])
    assert warn.status == "warn" and "95% of their capacity" in warn.detail and "bottleneck" in warn.detail
    assert ck.client_cpu(step(), []).status == "n/a"
    assert ck.client_cpu(step(), [os_sample(client_cpu_pct=None)]).status == "n/a"


def test_failures_check() -> None:
    assert ck.failures(step(failed=0, retried=0)).status == "ok"
    assert ck.failures(step(failed=None, retried=None)).status == "ok"
    retried = ck.failures(step(failed=0, retried=3, retries=4))
    assert retried.status == "ok" and retried.detail == "0 failed, 3 retried (4 retries)"
    failed = ck.failures(step(failed=2, retried=1, retries=1))
    assert failed.status == "warn" and failed.detail.startswith("2 failed") and failed.value is None


# ---- build ----------------------------------------------------------------------------------------


def test_build_groups_and_medians(run_data: RunData) -> None:
    view = build(run_data)
    assert [(g.variant, g.clients, len(g.done)) for g in view.groups] == [("base", 2, 2), ("base", 8, 2)]
    c2, c8 = view.groups
    assert c2.label == "c2" and c8.label == "c8"
    assert c2.tps == Spread(100.0, 100.0, 100.0, 2)
    assert c8.tps == Spread(200.0, 180.0, 220.0, 2)
    assert c8.lat_avg is not None
    assert c8.lat_avg.value == pytest.approx((8000 / 180 + 8000 / 220) / 2)
    assert (c8.lat_avg.lo, c8.lat_avg.hi) == (pytest.approx(8000 / 220), pytest.approx(8000 / 180))
    assert c8.p99 == Spread(90.0, 80.0, 100.0, 2)
    assert c8.lat_max == Spread(105.0, 90.0, 120.0, 2)
    assert c8.transactions == Spread(2000.0, 1800.0, 2200.0, 2)
    assert c8.threads == 4 and c2.threads == 2
    assert view.variants() == ["base"]


def test_build_noisy_flag(run_data: RunData) -> None:
    c2, c8 = build(run_data).groups
    assert c2.noisy is False
    assert c8.noisy is True  # 180 vs 220: 20 % > 10 %


def test_noisy_needs_two_reps_and_more_than_10_pct() -> None:
    data = make_run_data()
    steps = [replace(s, tps=105.0) if s.step_id == 2 else s for s in data.steps]  # 100 / 105: 4.9 %
    assert build(replace(data, steps=steps)).groups[0].noisy is False
    steps = [replace(s, tps=111.0) if s.step_id == 2 else s for s in data.steps]  # 11 / 105.5 = 10.4 %
    assert build(replace(data, steps=steps)).groups[0].noisy is True
    one = replace(data, steps=data.steps[:1] + data.steps[2:3])
    assert [g.noisy for g in build(one).groups] == [False, False]


def test_noise_threshold_from_the_plan_or_given() -> None:
    """The plan's threshold travels with the run; show/compare can ask for another."""
    data = make_run_data()
    plan = json.loads(data.run.plan_json)
    strict = replace(data, run=replace(data.run, plan_json=json.dumps({**plan, "noise_pct": 25.0})))
    c8 = build(strict).groups[1]
    assert c8.tps_spread_pct == 20.0 and c8.noise_pct == 25.0 and c8.noisy is False
    assert not any("noisy" in w for w in build(strict).warnings)
    assert build(strict, noise_pct=19.9).groups[1].noisy is True
    assert build(data, noise_pct=5.0).groups[0].noisy is False  # c2: one value repeated


def test_build_waits_merged_across_reps(run_data: RunData) -> None:
    c2, c8 = build(run_data).groups
    assert c2.snapshots == 20 and c8.snapshots == 40
    assert [(w.wait_event_type, w.wait_event, w.count, w.aas) for w in c2.waits] == [
        ("CPU", "running", 22, pytest.approx(1.1)),
        ("LWLock", "WALWrite", 5, pytest.approx(0.25)),
        ("Lock", "transactionid", 3, pytest.approx(0.15)),
    ]
    assert total_aas(c2.waits) == pytest.approx(1.5)
    assert [(w.wait_event, w.count, w.aas) for w in c8.waits] == [
        ("running", 60, pytest.approx(1.5)), ("transactionid", 60, pytest.approx(1.5))]  # a tie: by type
    assert [(w.wait_event, w.count, w.aas) for w in c2.waits_bg] == [("WalWriterMain", 20, pytest.approx(1.0))]
    assert c8.waits_bg == ()


def test_build_scripts_over_reps(run_data: RunData) -> None:
    c2, c8 = build(run_data).groups
    assert [(s.name, s.weight) for s in c2.scripts] == [("transfer", 60), ("balance", 40)]
    transfer = c2.scripts[0]
    assert transfer.transactions == 605
    assert transfer.tps == Spread(61.0 / 2 + 60.0 / 2, 60.0, 61.0, 2)
    assert transfer.lat_avg == Spread(26.0, 25.0, 27.0, 2)
    assert transfer.p95 == Spread(41.0, 40.0, 42.0, 2)
    assert (c8.scripts[0].failed, c8.scripts[0].retried) == (1, 2)


def test_build_system_row(run_data: RunData) -> None:
    c2, c8 = build(run_data).groups
    sysrow = c2.system
    # samples: idle 50, 20 (step 1), 40 (step 2) -> busy 50, 80, 60
    assert sysrow.peak_cpu == 80.0 and sysrow.peak_user == 70.0
    assert sysrow.mean_cpu == pytest.approx(190 / 3)
    assert sysrow.peak_load1 == 2.5
    assert sysrow.mem_available_mb == 3 * 1024
    assert sysrow.client_cpu == 50.0
    assert c8.system.peak_cpu is None and c8.system.client_cpu is None


def test_build_checks_per_rep(run_data: RunData) -> None:
    c2, c8 = build(run_data).groups
    assert [rep for rep, _ in c2.checks] == [1, 2]
    by_name = {c.id: c for c in c2.checks[0][1]}
    assert set(by_name) == {"tps-vs-pgbench", "tps-vs-commits", "littles-law", "aas-vs-active-time", "client-cpu",
                            "failures"}
    assert {n: c.status for n, c in by_name.items()} == {
        "tps-vs-pgbench": "ok", "tps-vs-commits": "ok", "littles-law": "ok", "aas-vs-active-time": "ok",
        "client-cpu": "ok", "failures": "ok"}
    assert "sampled AAS 1.50 vs active_time 1.50" in by_name["aas-vs-active-time"].detail
    rep2 = {c.id: c.status for c in c8.checks[1][1]}
    assert rep2["tps-vs-pgbench"] == "warn"
    assert rep2["aas-vs-active-time"] == "n/a" and rep2["client-cpu"] == "n/a"


def test_build_warnings(run_data: RunData) -> None:
    w = build(run_data).warnings
    assert "c8: noisy, TPS varies 20% across 2 repetitions (180..220; threshold 10%)" in w
    assert "c8 rep 2: tps-vs-pgbench: log 220.0 vs pgbench 200.0 tps (+10.0%)" in w
    assert any(x.startswith("steps are shorter than a minute") for x in w)
    assert not any("one repetition per step" in x for x in w)  # the plan has reps=2
    assert not any(x.startswith("c2") for x in w)
    assert len(w) == 3


def test_build_warnings_one_rep_long_steps_and_money() -> None:
    data = make_run_data()
    plan = json.dumps(Plan(clients=(2, 8), duration_s=60, reps=1).to_dict())
    steps = [s for s in data.steps if s.rep == 1]
    data = replace(with_run(data, plan_json=plan), steps=steps,
                   env={**data.env, "check.money": "money is not conserved: 5 cents missing",
                        "check.money.ok": "false"})
    w = build(data).warnings
    assert any(x.startswith("one repetition per step") for x in w)
    assert not any(x.startswith("steps are shorter") for x in w)
    assert w[-1] == "money is not conserved: 5 cents missing"
    ok = replace(data, env={**data.env, "check.money.ok": "true"})
    assert "money is not conserved: 5 cents missing" not in build(ok).warnings


def test_build_failed_step_and_interrupted_run() -> None:
    data = make_run_data()
    failed = replace(data.steps[3], status="failed", status_reason="pgbench exit 2: connection refused",
                     tps=None, lat_avg_ms=None)
    data = replace(with_run(data, status="interrupted"), steps=[*data.steps[:3], failed])
    view = build(data)
    c8 = view.groups[1]
    assert len(c8.steps) == 2 and len(c8.done) == 1
    assert c8.tps == Spread(180.0, 180.0, 180.0, 1)
    assert c8.noisy is False
    assert c8.snapshots == 20  # only the completed rep's snapshots
    assert view.warnings[0] == ("the run was interrupted after 3 of 4 steps; the completed steps are shown")
    assert "step c8 rep 2 failed: pgbench exit 2: connection refused" in view.warnings


def test_build_failed_run_reason() -> None:
    data = with_run(make_run_data(), status="failed", status_reason="the server died")
    assert build(data).warnings[0] == "the run failed: the server died"


def test_spread_of() -> None:
    assert Spread.of([]) is None
    assert Spread.of([3.0, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0, 3)


def test_sampling_check_compares_sessions_in_statement_or_transaction() -> None:
    """Under CPU contention snapshots show part of active_time as idle in transaction (the sampler gets a
    core when a backend has just blocked: docs/aas.md); the sum agrees."""
    from builders import step

    from pgknee.analyze import checks as ck

    s = step(bench_start=1000.0, bench_end=1010.0)
    # server: 2.6 active + 3.8 idle in transaction; samples: 2.1 active, 6.3 in total (-1.6%)
    c = ck.sampled_vs_active_time(s, 2.1, 600, 26_000.0, sampled_busy=6.3, idle_in_xact_ms=38_000.0)
    assert c.status == "ok"
    assert c.detail.startswith("in statement or transaction: sampled 6.30 vs server 6.40 (-1.6%")
    assert "sampled active 2.10 vs active_time 2.60 (-19.2%)" in c.detail
    bad = ck.sampled_vs_active_time(s, 2.1, 600, 26_000.0, sampled_busy=4.0, idle_in_xact_ms=38_000.0)
    assert bad.status == "warn" and "(-37.5%" in bad.detail
    # without the idle-in-transaction figures it falls back to active only
    only = ck.sampled_vs_active_time(s, 2.5, 600, 26_000.0)
    assert only.status == "ok" and only.detail.startswith("sampled AAS 2.50 vs active_time 2.60 (-3.8%")


def test_sampling_check_says_when_an_excess_is_the_clocks_parse_and_bind() -> None:
    """Under the extended and prepared protocols active_time leaves out Parse and Bind (docs/aas.md):
    sampling above it is the clock's shortfall, and the detail says so; still judged by the tolerance."""
    from builders import step

    from pgknee.analyze import checks as ck

    def check(protocol: str, busy: float) -> ck.Check:
        return ck.sampled_vs_active_time(step(protocol=protocol, bench_start=0.0, bench_end=10.0), 2.9, 600,
                                         26_000.0, sampled_busy=busy, idle_in_xact_ms=38_000.0)

    ext = check("extended", 6.72)  # +5%, as measured on the e-wallet workload
    assert ext.status == "ok" and "leaves out Parse and Bind" in ext.detail
    assert "Parse and Bind" not in check("simple", 6.72).detail
    assert "Parse and Bind" not in check("prepared", 6.08).detail  # a shortfall is not the clock's
    far = check("extended", 9.6)  # +50%: a query that takes long to plan
    assert far.status == "warn" and "leaves out Parse and Bind" in far.detail


def test_sampling_check_is_not_applied_to_pipeline_steps() -> None:
    from builders import step

    from pgknee.analyze import checks as ck

    c = ck.sampled_vs_active_time(step(pipeline=1), 3.0, 600, 10_000.0, sampled_busy=3.0, idle_in_xact_ms=0.0)
    assert c.status == "n/a" and "pipeline mode" in c.detail


def test_commits_check_weights_the_scripts_commits() -> None:
    """A custom script of two autocommit SELECTs (weight 100) and one of one (weight 10): 1.91
    commits per transaction, so 1,910 commits/s for 1,000 TPS is right, not 91% too many."""
    s = step(tps=1000.0, tps_db=1910.2, transactions=10000)
    assert ck.tps_vs_database(s).status == "warn"
    c = ck.tps_vs_database(s, 1910 / 1000)
    assert c.status == "ok" and "x 1.91 commits per transaction (+0.0%)" in c.detail


# ---- what the tables show, computed -----------------------------------------------------------


def test_sweep_changes_and_best_counts(run_data: RunData) -> None:
    from pgknee.analyze.sweep import Metric, sweep

    sw = sweep(build(run_data), "base")
    rows = {m.metric: m for m in sw.metrics}
    tps = rows[Metric.TPS]
    assert [f.value if f else None for f in tps.values] == [100.0, 200.0]
    assert tps.changes == (None, pytest.approx(100.0)) and tps.best == "c8"  # more TPS is better
    assert rows[Metric.LAT_AVG].best == "c2" and rows[Metric.LAT_AVG].changes[1] == pytest.approx(102.02, abs=0.01)
    assert rows[Metric.TRANSACTIONS].best == "c8"
    assert sw.repeated is True and sw.lag is None


def test_wait_profile_record_carries_errors_and_total() -> None:
    from pgknee.analyze.waits import profile_of

    rows = wait_profile([("CPU", "running", 100), ("IO", "DataFileRead", 25)], 50)
    p = profile_of(rows, 50, wait_profile([("Activity", "WalWriterMain", 4)], 50))
    assert p.total_aas == pytest.approx(2.5) and p.snapshots == 50
    assert p.errors == (pytest.approx(0.2), pytest.approx(0.1))  # AAS / sqrt(count)
    assert p.background_errors == (pytest.approx(0.04),)


def test_sizing_and_where_a_curve_reaches_a_rate(run_data: RunData) -> None:
    from pgknee.analyze.sizing import reach, sizing

    s = sizing(1000.0, 0.005, cores=4, spindles=1)
    assert (s.busy, s.busy_whole, s.rule_of_thumb) == (pytest.approx(5.0), 5, 9)
    view = build(run_data)
    assert reach(view, "base", 150.0).first == 8
    never = reach(view, "base", 500.0)
    assert never.first is None and never.best == (8, 200.0)


def test_run_listing_names_the_best_completed_step(run_data: RunData) -> None:
    from pgknee.analyze.run import listing

    lst = listing(run_data.run, run_data.steps)
    assert lst.completed == 4 and lst.best is not None and (lst.best.clients, lst.best.tps) == (8, 220.0)
    assert listing(run_data.run, []).best is None


def test_comparison_rows_carry_the_tps_change_against_the_first_variant(run_data: RunData) -> None:
    from pgknee.analyze.compare import comparison_rows

    other = [replace(s, variant="fast", step_id=s.step_id + 10, tps=(s.tps or 0) * 1.5) for s in run_data.steps]
    ids = {s.step_id for s in other}
    data = replace(run_data, steps=[*run_data.steps, *other],
                   snaps={**run_data.snaps, **dict.fromkeys(ids, (0, 0.0, 0.0))})
    rows = comparison_rows(build(data))
    assert [(r.group.variant, r.group.clients) for r in rows] == [("base", 2), ("fast", 2), ("base", 8), ("fast", 8)]
    assert [r.tps_change for r in rows] == [None, pytest.approx(50.0), None, pytest.approx(50.0)]


def test_wait_stack_keeps_the_largest_events_and_adds_up_the_rest() -> None:
    from pgknee.analyze.waits import stack

    c2 = wait_profile([("CPU", "running", 20), ("Lock", "tuple", 2), ("IO", "DataFileRead", 1)], 10)
    c8 = wait_profile([("CPU", "running", 30), ("Lock", "tuple", 40)], 10)
    s = stack([c2, c8], top=2)
    assert s.events == (("CPU", "running"), ("Lock", "tuple"))  # by AAS over both counts: 5.0, 4.2 (IO 0.1)
    assert s.aas == ((pytest.approx(2.0), pytest.approx(3.0)), (pytest.approx(0.2), pytest.approx(4.0)))
    assert s.rest == (pytest.approx(0.1), 0)
