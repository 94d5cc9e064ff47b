"""pg_wait_sampling as a second wait source, against real servers: the embedded server preloads
it and each step stores its profile beside the pg_stat_activity samples; a user's server is
read only when the extension is already there, and never gets it from pgknee."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psycopg
import pytest

from pgknee.analyze.waitsource import compare_sources
from pgknee.collect.protocol import Collectors
from pgknee.collect.queries import load
from pgknee.collect.waitsampling import WaitProfiler
from pgknee.model.samples import WaitSampling
from pgknee.store.db import Store
from pgknee.targets.local import EmbeddedCluster, find_bindir, wait_sampling_settings

from .conftest import APP_ENV, APP_PASSWORD, QUICK, SCALE, dsn_of, pgknee, sql

# the tests of the second source need its library for the server they run on (Debian packages it
# for 15; make matrix runs the suite on servers without it: tests/conftest.py allows the skip there)
needs_library = pytest.mark.skipif(not wait_sampling_settings(find_bindir(), {}),
                                   reason=f"pg_wait_sampling is not installed for this server ({find_bindir()})")


@needs_library
def test_the_embedded_server_records_a_second_profile_per_step(tmp_path: Path) -> None:
    store = tmp_path / "w.db"
    r = pgknee("run", "--clients", "4", "--duration", "6s", "--scale", SCALE, "--store", str(store), *QUICK,
               cwd=tmp_path)
    assert r.code == 0, r.err
    (note,) = sql(store, "SELECT value FROM run_environment WHERE key = 'collect.wait_sampling'")
    assert str(note[0]).startswith("on, profile_period 10 ms, probes counted"), note
    ((step_id, probes, counted, window_s, backends),) = sql(
        store, "SELECT step_id, probes, probes_counted, window_s, backends FROM step_wait_sampling")
    assert counted == 1 and backends == 4
    assert 90 <= probes / window_s <= 100.5  # the collector's real rate: a little under 100 Hz
    s = Store(str(store), create=False)
    c = compare_sources(s.wait_counts([step_id], ("bench",), "client"), s.snapshot_count([step_id], ("bench",)),
                        list(s.records([step_id], [WaitSampling])[step_id]))
    assert c is not None and c.profile_total > 0.1  # e-wallet at 4 clients waits on WAL
    # both measure the same waits, each with its sampling error (60 snapshots of this 6 s step against
    # some 600 probes): the bound is 4 of their combined sigmas, not a percentage. Measured here: 10 runs
    # on 2026-11-25 (half beside make test's load) -25.9%..+0.1%, within 2 sigmas in 8 of 10; a fresh
    # clone's make test on 2026-11-26 +21.3%, 1.8 sigmas (sampled 1.89 vs 1.55, sigma 0.18), which the
    # percentage bound of before (-46%..+21%, from those 10 runs) failed; 5 runs on an idle machine
    # after it: -14.9%..-26.4%, 1.3..2.4 sigmas
    sigmas = abs(c.sampled_total - c.profile_total) / c.total_err
    assert sigmas < 4, (c.sampled_total, c.profile_total, c.total_err)
    out = pgknee("waits", "last", "--store", str(store))
    assert out.code == 0, out.err
    assert "pg_stat_activity, sampled 10 Hz" in out.out and "pg_wait_sampling, in-server, ~9" in out.out
    assert "Agreement: waits other than CPU and Client total" in out.out
    # and the run's report, in its wait section
    shown = pgknee("show", "last", "--store", str(store))
    assert shown.code == 0 and "Wait sources c4: two wait sources, 1 step(s)" in shown.out
    assert pgknee("report", "last", "--store", str(store), "--output", str(tmp_path / "r.md")).code == 0
    assert "Two wait sources: pg_stat_activity and pg_wait_sampling" in (tmp_path / "r.md").read_text()
    assert pgknee("show", "last", "--store", str(store), "--json", str(tmp_path / "r.json")).code == 0
    (step,) = json.loads((tmp_path / "r.json").read_text())["steps"]
    assert step["wait_sampling"]["probes"] == probes and 90 <= step["wait_sampling"]["probe_hz"] <= 100.5


def _extensions(c: EmbeddedCluster) -> set[tuple[str, str]]:
    out = set()
    for db in ("pgknee", "postgres"):
        with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname=db) as conn:
            out |= {(db, str(n)) for (n,) in conn.execute("SELECT extname FROM pg_extension").fetchall()}
    return out


@needs_library
def test_a_users_server_is_read_only_when_the_extension_is_there(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "u.db"
    before = _extensions(server)
    run = ("run", "--dsn", dsn_of(server), "--clients", "2", "--duration", "2s", "--scale", SCALE, "--schema",
           "bench_ws", "--store", str(store), *QUICK)
    r = pgknee(*run, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    assert _extensions(server) == before  # loaded there (the fixture preloads it) but never created by pgknee
    (note,) = sql(store, "SELECT value FROM run_environment WHERE key = 'collect.wait_sampling'")
    assert "extension is not created" in str(note[0]) and "CREATE EXTENSION pg_wait_sampling" in str(note[0])
    assert sql(store, "SELECT count(*) FROM step_wait_sampling") == [(0,)]
    # app is no superuser and not in pg_read_all_stats: the background processes (and the fixture's
    # superuser sessions) have no state or wait event for it; counted as hidden, never as "CPU running"
    ((least, most),) = sql(store, "SELECT min(hidden), max(hidden) FROM snapshots WHERE _phase = 'bench'")
    assert isinstance(least, int) and isinstance(most, int) and least >= 4, (least, most)
    assert sql(store, "SELECT count(*) FROM snap_pg_stat_activity WHERE backend_type IS NULL") == [(0,)]
    shown = pgknee("show", "last", "--store", str(store))
    assert shown.code == 0 and "(hidden)" in shown.out and "backends per snapshot this role may not see" in shown.out
    ((mean,),) = sql(store, "SELECT max(m) FROM (SELECT avg(hidden) AS m FROM snapshots WHERE _phase = 'bench' "
                            "GROUP BY step_id) AS s")
    said = " ".join(shown.out.split())
    assert f"pg_stat_activity hid {float(mean):.1f} backends per snapshot on average" in said, said
    assert "(bg) CPU" not in shown.out
    # the user creates it: the next run reads it, as the app role
    with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="postgres",
                         autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_wait_sampling")
    try:
        r = pgknee(*run, env=APP_ENV, cwd=tmp_path)
        assert r.code == 0, r.err
        assert sql(store, "SELECT count(*), min(probes_counted) FROM step_wait_sampling") == [(1, 1)]
    finally:
        with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="postgres",
                             autocommit=True) as conn:
            conn.execute("DROP EXTENSION IF EXISTS pg_wait_sampling")


@pytest.mark.parametrize("version", [120000, 140000])
def test_the_activity_query_counts_what_the_role_may_not_see(server: EmbeddedCluster, version: int) -> None:
    """Both versions of the sampler's query, as a plain role and as one in pg_read_all_stats: the
    hidden rows are counted and left out of the session rows; the privileged role sees them all."""
    with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="postgres",
                         autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS watcher")
        conn.execute(f"CREATE ROLE watcher LOGIN PASSWORD '{APP_PASSWORD}' IN ROLE pg_read_all_stats")
    query, params = load("activity", version), {"all_databases": False, "query_text": True}
    try:
        seen = {}
        for role in ("app", "watcher"):
            with psycopg.connect(dsn_of(server, role), password=APP_PASSWORD) as conn:
                rows = conn.execute(query, params).fetchall()
            seen[role] = rows[0][4]
            assert all(r[5] is None or r[-1] is not None for r in rows), rows  # no session without a type
        assert seen["app"] >= 4 and seen["watcher"] == 0, seen
    finally:
        with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="postgres",
                             autocommit=True) as conn:
            conn.execute("DROP ROLE IF EXISTS watcher")


@needs_library
def test_a_terminated_profile_session_is_replaced(server: EmbeddedCluster) -> None:
    """A DBA's pg_terminate_backend of both of the profiler's sessions between steps: the next
    step still gets its profile, its probes counted on a new reference session."""
    def superuser(db: str) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname=db, autocommit=True)

    with superuser("postgres") as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_wait_sampling")
    said: list[str] = []
    profiler = WaitProfiler.find(server.endpoint, create=False, say=said.append)
    collectors = Collectors(0)  # (the profile asks for no version)
    try:
        assert collectors.add(profiler) and profiler.note.startswith("on,"), (collectors.notes, profiler.note)
        with superuser("pgknee") as conn:
            ended = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                 "WHERE application_name LIKE 'pgknee:waitprofile%'").fetchone()
        assert ended == (2,)
        time.sleep(0.3)
        profiler.begin()
        time.sleep(1.0)
        profiler.end()
        (result,) = profiler.result(frozenset({1}))
        # pg_wait_sampling's collector probes every 10 ms at best; on a loaded machine its timer runs late (100
        # probes in 1.11 s beside another suite): counted means more than half, never more than the period allows
        assert result.probes_counted and 60 <= result.probes / result.window_s <= 100.5
        assert profiler.errors == [] and len(said) == 1  # only the note: nothing failed
    finally:
        collectors.close()
        with superuser("postgres") as conn:
            conn.execute("DROP EXTENSION IF EXISTS pg_wait_sampling")
