"""The user's own scripts, run against their schema untouched (pgbench's builtin workloads: test_security)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, dsn_of, pgknee, sql


def test_custom_scripts_run_against_the_users_schema_untouched(server: EmbeddedCluster, tmp_path: Path) -> None:
    script = tmp_path / "read_heavy.sql"
    script.write_text("\\set id random(1, 100)\nSELECT total FROM userdata.orders WHERE id = :id;\n")
    writer = tmp_path / "count.sql"
    writer.write_text("SELECT count(*) FROM userdata.orders;\n")

    def snapshot() -> tuple[object, ...]:
        with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="pgknee") as c:
            row = c.execute("SELECT (SELECT md5(string_agg(id || ':' || total, ',' ORDER BY id)) FROM userdata.orders),"
                            " (SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace)").fetchone()
            assert row is not None
            return tuple(row)

    before = snapshot()
    store = tmp_path / "c.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--workload", "custom", "--script", f"{script}@100",
               "--script", f"{writer}@10", "--clients", "2", "--duration", "1s", "--store", str(store), "--no-waits",
               *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    assert snapshot() == before  # same data, no schema added: pgknee runs the scripts as written, adds nothing
    rows = sql(store, "SELECT script, weight, transactions FROM step_scripts ORDER BY script_no")
    assert [(a, b) for a, b, _ in rows] == [("read_heavy", 100), ("count", 10)]
    assert rows[0][2] > rows[1][2] * 3  # the weights steer the mix


def test_script_errors_are_reported_with_file_and_line_before_anything_runs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT 1;\n\\set x random(1,\n")
    r = pgknee("run", "--workload", "custom", "--script", str(bad), "--store", str(tmp_path / "x.db"), cwd=tmp_path)
    assert r.code == 2 and "bad.sql:2: syntax error" in r.err and r.err.count("\n") == 1
    assert not (tmp_path / "x.db").exists() or sql(tmp_path / "x.db", "SELECT count(*) FROM runs") == [(0,)]
    gset = tmp_path / "g.sql"
    gset.write_text("SELECT 1 AS x \\gset\nSELECT :x;\n")
    r = pgknee("run", "--workload", "custom", "--script", str(gset), "--variant", "pipeline",
               "--store", str(tmp_path / "x.db"), cwd=tmp_path)
    assert r.code == 2 and "g.sql:1: \\gset reads a result" in r.err


def test_a_run_whose_every_step_failed_says_so_first_and_exits_non_zero(server: EmbeddedCluster,
                                                                       tmp_path: Path) -> None:
    """Issue 39: a replay whose every INSERT collided (its reads ran) ended 'completed (0/1 steps)'
    with exit code 0. Here one transaction in 500 divides by zero: pgbench aborts that client and
    fails each step, yet hundreds committed first, so no step ends the run. The first line says the
    run measured nothing, the exit code is pgbench's (4), and the run is kept with each reason."""
    script = tmp_path / "rarely_fails.sql"
    script.write_text("\\set r random(1, 500)\n\\if :r = 1\nSELECT 1 / 0;\n\\else\nSELECT 1;\n\\endif\n")
    store = tmp_path / "f.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--workload", "custom", "--script", str(script), "--clients", "2,4",
               "--duration", "2s", "--store", str(store), "--no-waits", *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 4, (r.code, r.err[-500:])
    first = next(line for line in r.err.splitlines() if line.startswith("pgknee: "))
    assert first.startswith("pgknee: run ") and "measured nothing: its 2 steps failed" in first, first
    assert "division by zero" in first
    statuses = [s for (s,) in sql(store, "SELECT status FROM steps")]
    assert len(statuses) == 2 and "completed" not in statuses
