"""pgknee cleanup --dsn: pgknee's own workload schemas dropped on a real server, each with its own
tables only; a schema that is not pgknee's, or one holding something of the user's, refused with
nothing changed."""

from __future__ import annotations

from pathlib import Path

import psycopg

from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, SCALE, dsn_of, pgknee


def _admin(c: EmbeddedCluster) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee", autocommit=True)


def _schemas(c: EmbeddedCluster, *names: str) -> set[str]:
    with _admin(c) as conn:
        return {str(r[0]) for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s)",
                                                 (list(names),)).fetchall()}


def test_cleanup_drops_pgknees_schemas_and_nothing_else(server: EmbeddedCluster, tmp_path: Path) -> None:
    for schema in ("gone_a", "gone_b"):
        r = pgknee("run", "--dsn", dsn_of(server), "--schema", schema, "--clients", "2", "--duration", "1s",
                   "--scale", SCALE, "--store", str(tmp_path / "t.db"), "--quiet", "--no-waits", *QUICK,
                   env=APP_ENV, cwd=tmp_path)
        assert r.code == 0, r.err
    with _admin(server) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS users_own")
        conn.execute("CREATE TABLE IF NOT EXISTS users_own.keep (x int)")
        conn.execute("GRANT ALL ON SCHEMA users_own TO app")
        conn.execute("CREATE TABLE gone_b.notes (x text)")  # the user's table inside pgknee's schema
        conn.execute("ALTER TABLE gone_b.notes OWNER TO app")
    dry = pgknee("cleanup", "--dsn", dsn_of(server), "--dry-run", env=APP_ENV, cwd=tmp_path)
    assert dry.code == 0, dry.err
    assert "would drop schema 'gone_a' (owner app, " in dry.out and "would drop schema 'gone_b'" in dry.out
    assert "users_own" not in dry.out and _schemas(server, "gone_a", "gone_b") == {"gone_a", "gone_b"}
    foreign = pgknee("cleanup", "--dsn", dsn_of(server), "--schema", "users_own", env=APP_ENV, cwd=tmp_path)
    assert foreign.code == 2 and "schema 'users_own' already exists and was not created by pgknee" in foreign.err
    one = pgknee("cleanup", "--dsn", dsn_of(server), "--schema", "gone_a", env=APP_ENV, cwd=tmp_path)
    assert one.code == 0 and "dropped schema 'gone_a' (owner app)" in one.out, one.err
    assert _schemas(server, "gone_a", "gone_b", "users_own") == {"gone_b", "users_own"}
    held = pgknee("cleanup", "--dsn", dsn_of(server), env=APP_ENV, cwd=tmp_path)  # gone_b holds the user's table
    assert held.code == 2 and "table gone_b.notes depends on schema gone_b" in held.err, held.err
    with _admin(server) as conn:
        assert conn.execute("SELECT count(*) FROM users_own.keep").fetchone() == (0,)
        conn.execute("DROP TABLE gone_b.notes")
    done = pgknee("cleanup", "--dsn", dsn_of(server), env=APP_ENV, cwd=tmp_path)
    assert done.code == 0 and "dropped schema 'gone_b'" in done.out and "users_own" not in done.out
    assert _schemas(server, "gone_a", "gone_b", "users_own") == {"users_own"}
    empty = pgknee("cleanup", "--dsn", dsn_of(server), "--dry-run", env=APP_ENV, cwd=tmp_path)
    assert empty.code == 0 and empty.out.startswith("no workload schema of pgknee's in ")
    bad = pgknee("cleanup", "--dry-run", env=APP_ENV, cwd=tmp_path)
    assert bad.code == 2 and "--schema and --dry-run go with --dsn" in bad.err
