"""The real end-to-end sweep: pgknee's own embedded cluster, the waits around each step at their
defaults, the tables, a JSON and a report written as the run ends; what lands in the store, and
whether it agrees with the server and pgbench. (The read commands on a stored run are tested on
the golden store: test_views.py.)"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from .conftest import SCALE, CliResult, pgknee, pgknee_processes, sql, tmp_pgknee_dirs, workload_tps_db

# one sweep for the whole module, so its tests stay in one test process
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sweep")]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory,
          suite_share: Callable[[], AbstractContextManager[None]]) -> Iterator[tuple[Path, Path, CliResult]]:
    """One real sweep on a throwaway embedded cluster: 2 and 4 clients, twice each, 3 s steps."""
    d = tmp_path_factory.mktemp("sweep")
    store, js = d / "s.db", d / "s.json"
    before = tmp_pgknee_dirs()
    with suite_share():
        r = pgknee("run", "--clients", "2,4", "--duration", "3s", "--reps", "2", "--scale", SCALE,
                   "--store", str(store), "--json", str(js), "--report", str(d / "s.html"), cwd=d)
    assert r.code == 0, r.err
    assert tmp_pgknee_dirs() - before == set()  # its server and run directories are gone
    yield store, js, r

ARTICLE_QUERY = """
SELECT
  COALESCE(wait_event_type, 'CPU') AS wait_event_type,
  COALESCE(wait_event, 'running')  AS wait_event,
  COUNT(*)                          AS occurrences,
  COUNT(DISTINCT _collected_at)     AS snapshot_count
FROM snap_pg_stat_activity
WHERE _run_id = ?
  AND _phase IN ('bench')
  AND state = 'active'
GROUP BY 1, 2
ORDER BY 3 DESC
LIMIT 20
"""


def _run_id(store: Path) -> str:
    return str(sql(store, "SELECT run_id FROM runs")[0][0])


def test_run_completes_with_all_steps(sweep: tuple[Path, Path, CliResult]) -> None:
    store, _, r = sweep
    assert sql(store, "SELECT status, steps_planned FROM runs") == [("completed", 4)]
    steps = sql(store, "SELECT clients, rep, status, transactions, tps, tps_pgbench, step_id, lat_avg_ms, "
                       "lat_p50_ms, lat_p95_ms, lat_p99_ms, lat_max_ms, failed FROM steps ORDER BY seq")
    assert [(s[0], s[1], s[2]) for s in steps] == [(2, 1, "completed"), (2, 2, "completed"),
                                                   (4, 1, "completed"), (4, 2, "completed")]
    for (_c, _r, _st, tx, tps, tps_pg, sid, avg, p50, p95, p99, mx, failed) in steps:
        assert tx > 100
        # TPS is the log's transactions over pgbench's own window (its elapsed time less the
        # connecting), so it equals pgbench's TPS; the window is about the 3 s asked for
        assert abs(tps - tps_pg) < 1e-6 * tps and tx / 3.6 < tps < tx / 2.6
        assert abs(tps - tps_pg) / tps_pg < 0.05
        assert abs(workload_tps_db(store, sid) - tps) / tps < 0.05  # pg_stat_database agrees with the log
        assert 0 < p50 <= p95 <= p99 <= mx
        assert avg > 0
        assert failed == 0
    assert "Data Summary" in r.out and "▲" in r.out


def test_latency_is_measured_and_littles_law_holds(sweep: tuple[Path, Path, CliResult]) -> None:
    store, _, _ = sweep
    for clients, tps, avg in sql(store, "SELECT clients, tps, lat_avg_ms FROM steps"):
        busy = tps * avg / 1000.0
        assert abs(busy - clients) / clients < 0.15, (clients, busy)


def test_per_script_results(sweep: tuple[Path, Path, CliResult]) -> None:
    store, _, _ = sweep
    rows = sql(store, "SELECT script, weight, sum(transactions) FROM step_scripts GROUP BY script, weight "
                      "ORDER BY weight DESC")
    assert [(r[0], r[1]) for r in rows] == [("transfer", 60), ("balance", 25), ("history", 15)]
    total = sum(r[2] for r in rows)
    assert total == sql(store, "SELECT sum(transactions) FROM steps")[0][0]
    share = rows[0][2] / total
    assert 0.5 < share < 0.7  # transfer is 60% of the mix


def test_snapshots_cover_all_phases_and_aas_adds_up(sweep: tuple[Path, Path, CliResult]) -> None:
    store, _, _ = sweep
    phases = {p for (p,) in sql(store, "SELECT DISTINCT _phase FROM snapshots")}
    assert {"pre", "bench", "post"} <= phases
    for (step_id,) in sql(store, "SELECT step_id FROM steps"):
        n = sql(store, "SELECT count(*) FROM snapshots WHERE step_id = ? AND _phase = 'bench'", step_id)[0][0]
        facts = dict(sql(store, "SELECT name, value FROM step_facts WHERE step_id = ?", step_id))
        # ~10 Hz over 3 s, with jitter; on a loaded machine the sampler lengthens its interval by itself
        # (collect.pace: 16 snapshots at up to 0.2 s in a matrix run), and says to what it went:
        # at least 60% of the ticks at the interval it ended at, at most 1.5 times those at the plan's
        bench, interval = float(facts["bench.seconds"]), float(facts["activity.interval_s"])  # type: ignore[arg-type]
        assert 0.6 * bench / interval <= n <= 1.5 * bench / 0.1, (n, bench, interval)
        active = sql(store, "SELECT count(*) FROM snap_pg_stat_activity WHERE _step_id = ? AND _phase = 'bench' "
                            "AND state = 'active' AND backend_type = 'client backend'", step_id)[0][0]
        counted = sql(store, "SELECT sum(active) FROM snapshots WHERE step_id = ? AND _phase = 'bench'", step_id)[0][0]
        assert active == counted  # every active session counted was stored
        clients = sql(store, "SELECT clients FROM steps WHERE step_id = ?", step_id)[0][0]
        assert 0 < active / n <= clients  # total AAS cannot exceed the client count
    # the sampler left itself out
    assert sql(store, "SELECT count(*) FROM snap_pg_stat_activity WHERE application_name LIKE 'pgknee:%'") == [(0,)]


def test_articles_query_runs_unchanged(sweep: tuple[Path, Path, CliResult]) -> None:
    store, _, _ = sweep
    with sqlite3.connect(store) as db:
        rows = db.execute(ARTICLE_QUERY, (_run_id(store),)).fetchall()
    assert rows, "the article's wait-profile query returned nothing"
    events = {(r[0], r[1]) for r in rows}
    assert ("CPU", "running") in events
    assert all(r[2] >= r[3] >= 1 for r in rows)


def test_os_samples_and_server_stats(sweep: tuple[Path, Path, CliResult]) -> None:
    store, _, _ = sweep
    for (step_id,) in sql(store, "SELECT step_id FROM steps"):
        rows = sql(store, "SELECT cpu_user + cpu_nice + cpu_system + cpu_iowait + cpu_irq + cpu_steal + cpu_idle, "
                          "load1, ctx_per_s, mem_available_kb, client_cpu_pct FROM os_samples "
                          "WHERE step_id = ? AND _phase = 'bench'", step_id)
        assert len(rows) >= 2
        for total, load1, ctx, mem, _client in rows:
            assert abs(total - 100) < 0.5
            assert load1 >= 0 and ctx > 0 and mem > 0
        assert any(r[4] is not None and r[4] > 0 for r in rows)  # pgbench's own CPU was seen
        deltas = dict(sql(store, "SELECT name, delta FROM step_pg_stat_database WHERE step_id = ?", step_id))
        tx = sql(store, "SELECT transactions FROM steps WHERE step_id = ?", step_id)[0][0]
        assert deltas["xact_commit"] >= tx
        assert deltas["blks_hit"] > 0
        assert deltas.get("active_time", 1) > 0


def test_environment_and_money_check(sweep: tuple[Path, Path, CliResult]) -> None:
    store, _, r = sweep
    env = dict(sql(store, "SELECT key, value FROM run_environment"))
    assert env["check.money.ok"] == "true"
    assert env["check.money.unbalanced_transactions"] == "0"
    assert env["check.money.total_balance"] == env["check.money.expected_total"]
    assert int(env["host.cpus"]) >= 1
    assert env["server.version"].startswith(("1", "2"))
    assert env["setting.max_connections"] == "100"
    assert env["pgbench.version"]
    assert "money conserved" in r.out or "money conserved" in r.err
    cmds = sql(store, "SELECT purpose, argv_json FROM run_commands")
    bench = [json.loads(a) for p, a in cmds if p == "bench"]
    assert len(bench) == 4
    assert all("--protocol=prepared" in a and "--no-vacuum" in a for a in bench)
    assert all(not any(x.startswith(("-h", "--host", "-U", "-p")) for x in a) for a in bench)


def test_json_output(sweep: tuple[Path, Path, CliResult]) -> None:
    store, js, _ = sweep
    d = json.loads(js.read_text())
    assert d["run_id"] == _run_id(store)
    assert d["format_version"] == 2
    assert [(s["clients"], s["rep"]) for s in d["steps"]] == [(2, 1), (2, 2), (4, 1), (4, 2)]
    s = d["steps"][0]
    assert set(s["latency_ms"]) >= {"avg", "stddev", "p50", "p95", "p99", "max"}
    assert s["transactions"] > 0 and s["failed"] == 0 and s["retried"] == 0
    assert s["wait_profile"] and abs(sum(w["aas"] for w in s["wait_profile"]) -
                                     sum(w["count"] for w in s["wait_profile"]) / s["snapshots"]) < 1e-9


def test_show_prints_the_same_tables_from_the_store(sweep: tuple[Path, Path, CliResult]) -> None:
    store, _, r = sweep
    shown = pgknee("show", _run_id(store), "--store", str(store))
    assert shown.code == 0, shown.err

    def summary(text: str) -> str:
        start = text.index("Data Summary")
        return text[start:text.index("% vs baseline", start)]

    assert summary(shown.out) == summary(r.out)
    last = pgknee("show", "last", "--store", str(store))
    assert summary(last.out) == summary(r.out)


def test_nothing_left_running(sweep: tuple[Path, Path, CliResult]) -> None:
    assert pgknee_processes() == []


def test_the_run_writes_its_report_as_it_ends(sweep: tuple[Path, Path, CliResult]) -> None:
    """run --report: one self-contained file, written after the tables (every chart kind, from a
    stored run with pooler and idle variants: test_report.py)."""
    store, _, r = sweep
    assert re.search(r"wrote .*s\.html \(\d+\.\d MB, \d+ charts, self-contained\)", r.err + r.out)
    text = (store.parent / "s.html").read_text()
    assert not re.search(r"<script|<link|<img|@import|url\((?!#)|src=|href=\"(?!#)", text)
    assert {"throughput-latency", "cpu", "waits", "timeline"} <= set(re.findall(r'data-chart="([a-z-]+)"', text))
    assert _run_id(store) in text
    assert "pgknee run --clients 2,4 --duration 3s" in text  # the command line, to reproduce the run


def test_sampled_sessions_agree_with_the_servers_clock(sweep: tuple[Path, Path, CliResult]) -> None:
    """Sessions in a statement or transaction, sampled at 10 Hz, agree with
    pg_stat_database's active_time + idle_in_transaction_time over the bench window."""
    store, _, _ = sweep
    for step_id, start, end in sql(store, "SELECT step_id, bench_start, bench_end FROM steps"):
        busy = sql(store, "SELECT avg(active + idle_in_xact), count(*) FROM snapshots "
                          "WHERE step_id = ? AND _phase = 'bench'", step_id)[0]
        d = dict(sql(store, "SELECT name, delta FROM step_pg_stat_database WHERE step_id = ?", step_id))
        truth = (d["active_time"] + d["idle_in_transaction_time"]) / 1000.0 / (end - start)
        # 30 snapshots of a 3 s step: this fixture's 20 steps measured 10 times here (2026-11-25, half of
        # them beside make test's load) fell -11.1%..+6.2% from the clock, mean -1.7%, sd 4.7%; 4 sd: 19%
        assert abs(busy[0] - truth) / truth < 0.19, (busy, truth)
