"""--dsn targets, refusals, bad input against real servers, and interruption."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import psycopg

from pgknee.targets.local import EmbeddedCluster

from .conftest import (
    APP_ENV,
    APP_PASSWORD,
    QUICK,
    SCALE,
    dsn_of,
    pgknee,
    pgknee_popen,
    pgknee_process,
    pgknee_processes,
    sql,
    tmp_pgknee_dirs,
    wait_for,
)


def _orders_checksum(c: EmbeddedCluster) -> tuple[int, str]:
    with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee") as conn:
        row = conn.execute("SELECT count(*), md5(string_agg(id || ':' || total, ',' ORDER BY id)) "
                           "FROM userdata.orders").fetchone()
        assert row is not None
        return int(row[0]), str(row[1])


def test_remote_dsn_installs_own_schema_and_keeps_secrets(server: EmbeddedCluster, tmp_path: Path) -> None:
    before = _orders_checksum(server)
    store = tmp_path / "r.db"
    env = APP_ENV
    r = pgknee("run", "--dsn", dsn_of(server), "--clients", "2", "--duration", "2s", "--scale", SCALE,
               "--schema", "bench_a", "--store", str(store), *QUICK, env=env, cwd=tmp_path)
    assert r.code == 0, r.err
    assert sql(store, "SELECT status, target_kind FROM runs") == [("completed", "remote")]
    assert _orders_checksum(server) == before  # the user's own data is untouched
    with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="pgknee") as conn:
        owner = conn.execute("SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'bench_a'").fetchone()
    assert owner == ("app",)
    # the password is nowhere: not in the store, not in the output
    assert APP_PASSWORD.encode() not in store.read_bytes()
    assert b"s3cr3t" not in store.read_bytes()
    assert "s3cr3t" not in r.out + r.err

    # a second run reuses the seeded schema (its password in the DSN this time: redacted everywhere)...
    dsn = f"postgresql://app:{APP_PASSWORD.replace(':', '%3A').replace(chr(92), '%5C')}@127.0.0.1:{server.port}/pgknee"
    again = pgknee("run", "--dsn", dsn, "--clients", "2", "--duration", "1s", "--scale", SCALE, "--schema", "bench_a",
                   "--store", str(store), "--json", str(tmp_path / "p.json"), *QUICK, cwd=tmp_path)
    assert again.code == 0, again.err
    assert "reusing the e-wallet data" in again.err
    assert "process list" in again.err  # the user is told the DSN's password is visible to ps
    for blob in (store.read_bytes(), (tmp_path / "p.json").read_bytes(), (again.out + again.err).encode()):
        assert b"s3cr3t" not in blob
    argvs = [str(a) for (a,) in sql(store, "SELECT argv_json FROM run_commands WHERE purpose = 'pgknee'")]
    assert len(argvs) == 2 and all("--dsn" in a and "s3cr3t" not in a for a in argvs)
    # ...refuses to reseed it at another scale without --reinit, and changes nothing
    refused = pgknee("run", "--dsn", dsn_of(server), "--clients", "2", "--duration", "1s", "--scale", "0.2",
                     "--schema", "bench_a", "--store", str(store), env=env, cwd=tmp_path)
    assert refused.code == 2
    assert "--reinit" in refused.err and refused.err.strip().count("\n") == 0
    assert len(sql(store, "SELECT run_id FROM runs")) == 2
    # and never touches a schema that is not its own, even with --reinit
    foreign = pgknee("run", "--dsn", dsn_of(server), "--clients", "2", "--duration", "1s", "--schema", "userdata",
                     "--reinit", "--store", str(store), env=env, cwd=tmp_path)
    assert foreign.code == 2 and "was not created by pgknee" in foreign.err
    assert _orders_checksum(server) == before


def test_wrong_password_and_unreachable_server(server: EmbeddedCluster, tmp_path: Path) -> None:
    r = pgknee("run", "--dsn", dsn_of(server), "--clients", "2", "--duration", "1s", "--store",
               str(tmp_path / "x.db"), env={"PGPASSWORD": "wrong"}, cwd=tmp_path)
    assert r.code == 3
    assert "password authentication failed" in r.err and r.err.strip().count("\n") == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = pgknee("run", "--dsn", f"postgresql://app@127.0.0.1:{port}/pgknee", "--clients", "2", "--duration", "1s",
               "--store", str(tmp_path / "x.db"), env={"PGPASSWORD": "x", "PGCONNECT_TIMEOUT": "3"}, cwd=tmp_path)
    assert r.code == 3 and "cannot connect" in r.err and "Traceback" not in r.err
    assert not (tmp_path / "x.db").exists()  # nothing recorded for a failed start, not even an empty store


def test_too_many_clients_for_max_connections(server: EmbeddedCluster, tmp_path: Path) -> None:
    r = pgknee("run", "--dsn", dsn_of(server), "--clients", "2,80", "--duration", "1s", "--store",
               str(tmp_path / "m.db"), env=APP_ENV, cwd=tmp_path)
    assert r.code == 3
    assert "needs 80 connections" in r.err and "max_connections=60" in r.err


def test_embedded_refuses_clients_above_max_connections_and_cleans_up(tmp_path: Path) -> None:
    before = tmp_pgknee_dirs()
    r = pgknee("run", "--clients", "500", "--duration", "1s", "--store", str(tmp_path / "e.db"), cwd=tmp_path)
    assert r.code == 3
    assert "--set max_connections=" in r.err
    assert pgknee_processes() == []
    assert tmp_pgknee_dirs() - before == set()
    assert not (tmp_path / "e.db").exists()  # refused before a run began: no store left behind


def test_missing_pgbench(tmp_path: Path) -> None:
    r = pgknee("run", "--clients", "2", "--duration", "1s", "--pgbench", "/nonexistent/pgbench",
               "--store", str(tmp_path / "n.db"), cwd=tmp_path)
    assert r.code == 2 and "not an executable" in r.err
    r = pgknee("run", "--clients", "2", "--duration", "1s", "--pgbench", "/bin/true", "--store",
               str(tmp_path / "n.db"), cwd=tmp_path)
    assert r.code == 4 and "cannot read the version of /bin/true" in r.err
    assert pgknee_processes() == []


def test_unwritable_store(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "s.db").write_bytes(b"this is not a database, and must stay as it is" * 100)
    r = pgknee("run", "--clients", "2", "--duration", "1s", "--store", str(ro / "s.db"), cwd=tmp_path)
    assert r.code == 5 and "collector database" in r.err
    assert (ro / "s.db").read_bytes().startswith(b"this is not a database")


def test_sigterm_keeps_completed_steps_and_leaves_nothing(tmp_path: Path) -> None:
    """The signal is the point: pgknee in a process of its own."""
    before = tmp_pgknee_dirs()
    store = tmp_path / "i.db"
    p = pgknee_popen("run", "--clients", "2,2,2,2", "--duration", "3s", "--scale", SCALE, "--store", str(store),
                     "--report", "r.html", *QUICK, cwd=tmp_path)

    def one_step_done() -> bool:
        try:
            return bool(sql(store, "SELECT count(*) FROM steps WHERE status = 'completed'")[0][0] >= 1)
        except Exception:
            return False

    if not wait_for(lambda: store.exists() and one_step_done(), 120):  # (sqlite3 would create the store)
        p.kill()
        raise AssertionError(f"no step completed: {p.communicate()[1]}")
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert sql(store, "SELECT status FROM runs") == [("interrupted",)]
    statuses = [s for (s,) in sql(store, "SELECT status FROM steps ORDER BY seq")]
    assert statuses[0] == "completed" and "running" not in statuses
    assert pgknee_processes() == []
    assert tmp_pgknee_dirs() - before == set()
    shown = pgknee_process("show", "last", "--store", str(store), script=True)  # the installed console script
    assert shown.code == 0 and "interrupted" in shown.out
    # the report asked for is written all the same: what exists, the steps never run marked
    report = (tmp_path / "r.html").read_text()
    done = statuses.count("completed")
    assert report.count(">NOT RUN<") == 4 - len(statuses) and f"({done}/4 steps)" in report
