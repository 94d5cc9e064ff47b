"""Idle sessions and max_connections, for real: sessions opened beside the workers and
closed after each step (none left on the server), the server's memory per step, the
embedded server restarted with a variant's max_connections, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, SCALE, beside_the_command, dsn_of, pgknee, pgknee_processes, sql, wait_for


def _idle_sessions(c: EmbeddedCluster) -> list[tuple[str, int]]:
    with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee") as conn:
        return [(str(s), int(n)) for s, n in conn.execute(
            "SELECT state, count(*) FROM pg_stat_activity WHERE application_name = 'pgknee:idle' "
            "GROUP BY state").fetchall()]


def test_idle_kinds_on_the_users_server_and_none_left(server: EmbeddedCluster, tmp_path: Path) -> None:
    store, js = tmp_path / "i.db", tmp_path / "i.json"
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_idle", "--clients", "2", "--duration", "1s",
               "--scale", SCALE, "--variant", "idle=0", "--variant", "idle=30", "--variant", "idle=20:idle_kind=sleep",
               "--variant", "idle=3:idle_kind=catalog", "--store", str(store), "--json", str(js), "--quiet", *QUICK,
               env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    assert _idle_sessions(server) == []  # every one closed
    steps = sql(store, "SELECT step_id, variant, idle, idle_kind, status FROM steps ORDER BY seq")
    assert [(s[1], s[2], s[3], s[4]) for s in steps] == [
        ("idle=0", 0, None, "completed"), ("idle=30", 30, "quiet", "completed"),
        ("idle=20:idle_kind=sleep", 20, "sleep", "completed"), ("idle=3:idle_kind=catalog", 3, "catalog", "completed")]
    for sid, _v, idle, _k, _s in steps:
        facts = dict(sql(store, "SELECT name, value FROM step_facts WHERE step_id = ?", sid))
        if idle:
            assert facts["idle.opened"] == idle and facts["idle.open_at_end"] == idle, facts
            assert "before_idle.mem.memavailable_kb" in facts and "end.mem.memavailable_kb" in facts
        else:
            assert "idle.opened" not in facts
        assert "pss.server_kb" not in " ".join(facts)  # a remote server's processes are not ours to read
    doc = json.loads(js.read_text())
    assert [g["memory"]["idle"] for g in doc["summary"]] == [0, 30, 20, 3]
    assert "Idle sessions and memory" in r.out
    # the idle sessions do not count as the workers' sessions in the wait profile
    assert all(s[0] != "pgknee:idle" for s in sql(store, "SELECT DISTINCT application_name FROM snap_pg_stat_activity"))


@pytest.mark.slow
def test_idle_on_the_embedded_server_measures_backend_memory(tmp_path: Path) -> None:
    store = tmp_path / "m.db"
    r = pgknee("run", "--workload", "select-only", "--scale", "1", "--clients", "2", "--duration", "2s",
               "--variant", "idle=0", "--variant", "idle=200", "--set", "max_connections=260", "--store", str(store),
               "--quiet", *QUICK, cwd=tmp_path)
    assert r.code == 0, r.err
    (sid,) = sql(store, "SELECT step_id FROM steps WHERE idle = 200")[0]
    facts = dict(sql(store, "SELECT name, value FROM step_facts WHERE step_id = ?", sid))
    assert facts["end.pss.idle_backends"] == 200
    assert 100 < facts["end.pss.idle_backend_mean_kb"] < 20_000, facts  # a backend's own memory, not shared_buffers
    assert facts["end.pss.server_processes"] >= 200
    (sid0,) = sql(store, "SELECT step_id FROM steps WHERE idle = 0")[0]
    facts0 = dict(sql(store, "SELECT name, value FROM step_facts WHERE step_id = ?", sid0))
    assert facts["end.pss.server_kb"] > facts0["end.pss.server_kb"] + 200 * 100
    assert pgknee_processes() == []


def test_more_idle_sessions_than_the_server_allows_is_refused(server: EmbeddedCluster, tmp_path: Path) -> None:
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_idle", "--clients", "2", "--variant", "idle=100",
               "--scale", SCALE, "--store", str(tmp_path / "x.db"), env=APP_ENV, cwd=tmp_path)
    assert r.code == 3 and "needs 102 connections (100 of them idle sessions)" in r.err, r.err
    assert r.err.count("\n") == 1
    for args, words in ((["--variant", "idle=x"], "idle='x'"), (["--variant", "idle=5:idle_kind=nap"],
                                                                 "unknown idle kind 'nap'")):
        bad = pgknee("run", *args, "--store", str(tmp_path / "y.db"), cwd=tmp_path)
        assert bad.code == 2 and words in bad.err, bad.err
    remote = pgknee("run", "--dsn", dsn_of(server), "--variant", "max_connections=500", "--store",
                    str(tmp_path / "y.db"), env=APP_ENV, cwd=tmp_path)
    assert remote.code == 2 and "which pgknee does only on its embedded server" in remote.err
    assert not (tmp_path / "y.db").exists()
    assert _idle_sessions(server) == []


def test_the_server_ending_idle_sessions_fails_the_step(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "k.db"
    ended: list[int] = []

    def end_them() -> None:  # as another session of the server's, while the run goes on in this thread
        if wait_for(lambda: sum(n for _, n in _idle_sessions(server)) == 10, 120):
            with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="pgknee") as conn:
                ended.extend(r[0] for r in conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgknee:idle'"))

    with beside_the_command(end_them):
        r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_idle", "--clients", "2", "--duration", "2s",
                   "--scale", SCALE, "--variant", "idle=10", "--store", str(store), *QUICK, env=APP_ENV, cwd=tmp_path)
    assert ended == [True] * 10, "the ten idle sessions were not seen open during the step"
    assert sql(store, "SELECT status, status_reason FROM steps") == [
        ("failed", "the server ended 10 of the 10 idle sessions during the step")], r.err
    assert _idle_sessions(server) == []


@pytest.mark.slow
def test_max_connections_variants_restart_the_embedded_server(tmp_path: Path) -> None:
    store = tmp_path / "c.db"
    r = pgknee("run", "--workload", "select-only", "--scale", "1", "--clients", "2", "--duration", "2s",
               "--variant", "max_connections=50,150", "--reps", "2", "--store", str(store), "--quiet", *QUICK,
               cwd=tmp_path)
    assert r.code == 0, r.err
    rows = sql(store, "SELECT s.variant, s.settings_json, f.value FROM steps s JOIN step_facts f "
                      "ON f.step_id = s.step_id AND f.name = 'setting.max_connections' ORDER BY s.seq")
    assert [(v, json.loads(str(j)), x) for v, j, x in rows] == [
        ("max_connections=50", {"max_connections": "50"}, 50.0), ("max_connections=150", {"max_connections": "150"},
                                                                   150.0)] * 2
    assert all(s == "completed" for (s,) in sql(store, "SELECT status FROM steps"))
    assert "server restarted with max_connections=150" in " ".join(r.out.split())
    assert pgknee_processes() == []
