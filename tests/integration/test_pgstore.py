"""The PostgreSQL results store, on a real cluster the tests start (the `server` fixture's, a
database of each test's own): the same schema as SQLite's after every migration, a real run
written to it and read by every read command, runs copied both ways reading back equal, several
processes writing at once, a schema pgknee did not make refused and untouched."""

from __future__ import annotations

import contextlib
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgknee.store.copy import tables
from pgknee.store.db import Store
from pgknee.store.dialect import PG_TYPE_CLASS, SQLITE_TYPE_CLASS
from pgknee.store.load import load_run
from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, SCALE, dsn_of, golden_runs, pgknee, pgknee_popen

KEEPER_PASSWORD = "k33p:er/@x"


def _admin(server: EmbeddedCluster) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="pgknee", autocommit=True)


@pytest.fixture
def pgstore(server: EmbeddedCluster) -> Iterator[str]:
    """A database of this test's own on the test cluster, owned by the role `keeper`: the store's
    DSN with its password (as $PGKNEE_STORE_DSN would hold it)."""
    name = f"results_{uuid.uuid4().hex[:8]}"
    with _admin(server) as conn:
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'keeper'").fetchone() is None:
            conn.execute(f"CREATE ROLE keeper LOGIN PASSWORD '{KEEPER_PASSWORD}'")
        conn.execute(f"CREATE DATABASE {name} OWNER keeper")
    yield f"host=127.0.0.1 port={server.port} dbname={name} user=keeper password='{KEEPER_PASSWORD}'"
    with _admin(server) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _schema_sqlite(path: Path) -> dict[str, list[tuple[str, str, bool, bool]]]:
    out: dict[str, list[tuple[str, str, bool, bool]]] = {}
    with contextlib.closing(sqlite3.connect(path)) as db:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            out[table] = [(name, SQLITE_TYPE_CLASS[typ.lower()], bool(notnull) or bool(pk), bool(pk))
                          for _, name, typ, notnull, _, pk in db.execute(f'PRAGMA table_info("{table}")')]
    return out


def _schema_pg(dsn: str) -> dict[str, list[tuple[str, str, bool, bool]]]:
    out: dict[str, list[tuple[str, str, bool, bool]]] = {}
    with psycopg.connect(dsn) as conn:
        pks = {(t, c) for t, c in conn.execute(
            "SELECT tc.table_name, k.column_name FROM information_schema.table_constraints tc JOIN "
            "information_schema.key_column_usage k USING (constraint_schema, constraint_name) "
            "WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = 'pgknee'")}
        for table, name, typ, nullable in conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
                "WHERE table_schema = 'pgknee' AND table_name <> 'store_format' ORDER BY table_name, ordinal_position"):
            out.setdefault(table, []).append((name, PG_TYPE_CLASS[typ], nullable == "NO", (table, name) in pks))
    return out


def test_every_migration_gives_both_engines_the_same_schema(tmp_path: Path, pgstore: str) -> None:
    Store(tmp_path / "s.db").close()
    Store(pgstore).close()
    lite, pg = _schema_sqlite(tmp_path / "s.db"), _schema_pg(pgstore)
    assert set(lite) == set(pg)
    assert len(lite) >= 19
    for table in lite:
        assert lite[table] == pg[table], table
    # the store is marked: its comment and its format
    with psycopg.connect(pgstore) as conn:
        comment, = conn.execute("SELECT obj_description('pgknee'::regnamespace, 'pg_namespace')").fetchone() or ("",)
        version = conn.execute("SELECT value FROM pgknee.store_format WHERE key = 'user_version'").fetchone()
    assert "pgknee" in str(comment)
    from pgknee.store.migrate import SCHEMA_VERSION
    assert version == (str(SCHEMA_VERSION),)


def test_every_table_of_run_data_is_copied(tmp_path: Path, pgstore: str) -> None:
    """store copy finds a run's tables in the schema: every table but the format's has a run or
    step column, so none is left behind."""
    for store in (Store(tmp_path / "s.db"), Store(pgstore)):
        names = {t.name for t in tables(store)}
        everything = set(_schema_pg(pgstore)) if store.postgres else set(_schema_sqlite(tmp_path / "s.db"))
        assert names == everything - {"agents"}  # the agents that registered: no run of theirs
        store.close()


def test_golden_runs_copied_both_ways_read_back_equal(golden: Path, tmp_path: Path, pgstore: str) -> None:
    env = {"PGKNEE_STORE_DSN": pgstore}
    r = pgknee("store", "copy", str(golden), "env", env=env)
    assert r.code == 0, r.err
    assert "2 run(s) copied" in r.out and KEEPER_PASSWORD not in r.out + r.err
    back = tmp_path / "back.db"
    r = pgknee("store", "copy", "env", str(back), env=env)
    assert r.code == 0, r.err
    a, b = golden_runs(golden)
    lite, pg, again = Store(golden, create=False), Store(pgstore, create=False), Store(back, create=False)
    for run in (a, b):
        one, two, three = load_run(lite, run), load_run(pg, run), load_run(again, run)
        assert len(one.steps) > 0 and one.snaps
        # the step ids are each store's own: compare what is keyed by them in step order
        for other in (two, three):
            assert _by_seq(one) == _by_seq(other)
    # a run already there is refused (nothing written), or skipped when asked
    r = pgknee("store", "copy", str(golden), "env", a, env=env)
    assert r.code != 0 and "already in" in r.err and "Traceback" not in r.err
    r = pgknee("store", "copy", str(golden), "env", "--skip-existing", env=env)
    assert r.code == 0 and "skipped" in r.out and "0 run(s) copied" in r.out
    assert len(Store(pgstore, create=False).runs()) == 2


def _by_seq(data: object) -> dict[str, object]:
    from dataclasses import asdict, fields

    d = data  # RunData
    steps = d.steps  # type: ignore[attr-defined]
    order = {s.step_id: s.seq for s in steps}
    out: dict[str, object] = {}
    for f in fields(d):  # type: ignore[arg-type]
        value = getattr(d, f.name)
        if f.name == "steps":
            value = [{**asdict(s), "step_id": None} for s in value]
        elif f.name == "commands":
            value = [(order.get(sid) if sid is not None else None, p, a) for sid, p, a in value]
        elif f.name == "statement_mix":
            value = (value[0], [(order[r[0]], *r[1:]) for r in value[1]])
        elif isinstance(value, dict) and value and all(isinstance(k, int) for k in value):
            value = {order[k]: v for k, v in value.items()}
        out[f.name] = _rounded(value)
    return out


def _rounded(value: object) -> object:
    """Floats to 12 significant digits: avg() may sum in another order on either engine."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_rounded(v) for v in value)  # type: ignore[call-arg, arg-type]
    return value


@pytest.mark.slow  # a run, then every read command on its store: 15 s (make slow)
def test_a_run_on_a_postgresql_store_is_read_by_every_read_command(server: EmbeddedCluster, pgstore: str,
                                                                     tmp_path: Path) -> None:
    env = {**APP_ENV, "PGKNEE_STORE_DSN": pgstore}
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_pgstore", "--clients", "1,2", "--duration", "2s",
               "--scale", SCALE, *QUICK, env=env)
    assert r.code == 0, r.err
    pg = Store(pgstore, create=False)
    (run,) = pg.runs()
    assert run.heartbeat_at is not None and abs(run.heartbeat_at - time.time()) < 120  # written as it ran
    steps = pg.steps(run.run_id)
    assert [s.clients for s in steps] == [1, 2] and all(s.status == "completed" and (s.tps or 0) > 0 for s in steps)
    with psycopg.connect(pgstore) as conn:
        commits = conn.execute("SELECT count(*) FROM pgknee.snap_pg_stat_activity").fetchone()
        assert commits is not None and int(str(commits[0])) > 10
        texts = conn.execute("SELECT string_agg(value, ' ') FROM pgknee.run_environment").fetchone()
        assert texts is not None and KEEPER_PASSWORD not in str(texts[0]) and APP_ENV["PGPASSWORD"] not in str(texts[0])
    outputs = []
    for args in (("runs",), ("show", "last"), ("waits", "last"), ("recommend", "last"),
                 ("compare", run.run_id, run.run_id + "x"), ("report", "last", "-o", str(tmp_path / "r.md"))):
        r = pgknee(*args, env=env)
        outputs.append(r.out + r.err)
        if args[0] != "compare":
            assert r.code == 0, (args, r.err)
    assert run.run_id in outputs[0] and "2/2" in outputs[0]
    assert f"Run {run.run_id}" in outputs[1]
    assert "AAS" in outputs[2]
    assert "no run" in outputs[4]  # compare reads the store too: a run it lacks is named
    assert run.run_id in (tmp_path / "r.md").read_text()
    assert all(KEEPER_PASSWORD not in o for o in outputs)
    # the same store through --store with a DSN without its password: libpq's password file has it
    bare = pgstore.replace(f" password='{KEEPER_PASSWORD}'", "")
    r = pgknee("runs", "--store", bare)
    assert r.code != 0 and "cannot reach the results store" in r.err and "password" in r.err
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{server.port}:*:keeper:{KEEPER_PASSWORD.replace(':', chr(92) + ':')}\n")
    passfile.chmod(0o600)
    r = pgknee("runs", "--store", bare, env={"PGPASSFILE": str(passfile)})
    assert r.code == 0 and run.run_id in r.out, r.err


def test_four_processes_write_runs_to_one_store_at_once(server: EmbeddedCluster, pgstore: str) -> None:
    env = {**APP_ENV, "PGKNEE_STORE_DSN": pgstore}
    procs = [pgknee_popen("run", "--dsn", dsn_of(server), "--schema", f"bench_w{i}", "--clients", "1", "--duration",
                          "1s", "--scale", SCALE, "--quiet", *QUICK, env=env) for i in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    pg = Store(pgstore, create=False)
    runs = pg.runs()
    assert len({r.run_id for r in runs}) == 4 and all(r.status == "completed" for r in runs)
    steps = [pg.steps(r.run_id) for r in runs]
    assert all(len(s) == 1 and s[0].run_id == r.run_id for s, r in zip(steps, runs, strict=True))
    assert len({s[0].step_id for s in steps}) == 4
    for s in steps:  # each step's samples are its own run's
        n = pg.db.execute("SELECT count(DISTINCT _run_id) FROM snap_pg_stat_activity WHERE _step_id = ?",
                          (s[0].step_id,)).fetchone()
        assert n == (1,)


def test_a_schema_pgknee_did_not_make_is_refused_and_untouched(server: EmbeddedCluster, pgstore: str) -> None:
    with psycopg.connect(pgstore, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA pgknee")
        conn.execute("CREATE TABLE pgknee.runs (id int PRIMARY KEY, note text)")
        conn.execute("INSERT INTO pgknee.runs VALUES (1, 'mine')")
    for args in (("runs",), ("store", "upgrade")):
        r = pgknee(*args, env={"PGKNEE_STORE_DSN": pgstore})
        assert r.code != 0 and "pgknee did not make" in r.err and "Traceback" not in r.err, r.err
        assert KEEPER_PASSWORD not in r.err
    with psycopg.connect(pgstore) as conn:
        assert conn.execute("SELECT * FROM pgknee.runs").fetchall() == [(1, "mine")]
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'pgknee'").fetchone() == (1,)


def test_an_unreachable_store_is_one_line_without_its_password(tmp_path: Path) -> None:
    dsn = "postgresql://keeper:hunter2secret@127.0.0.1:1/results"
    r = pgknee("runs", "--store", dsn)
    assert r.code != 0 and "cannot reach the results store" in r.err and "hunter2secret" not in r.err
    assert len(r.err.strip().splitlines()) <= 2 and "Traceback" not in r.err
