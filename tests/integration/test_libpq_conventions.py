"""libpq's conventions in --dsn and --target env, end to end against a real server: a service
file, the environment's server, several hosts, target_session_attrs, sslsni and keywords with no
environment variable. Every run must reach the test's server over TCP, pgbench included (its
sessions are in the samples, from 127.0.0.1)."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg

from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, SCALE, pgknee, sql

RUN = ("--clients", "2", "--duration", "1s", "--scale", SCALE, "--schema", "bench_libpq", *QUICK)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _reached(store: Path, port: int) -> None:
    """The run completed against the server on `port`, and pgbench's sessions came over TCP."""
    assert sql(store, "SELECT status, target_kind, target_label FROM runs ORDER BY created_at DESC LIMIT 1") == \
        [("completed", "remote", f"app@127.0.0.1:{port}/pgknee")]
    seen = sql(store, "SELECT DISTINCT client_addr FROM snap_pg_stat_activity WHERE application_name = 'pgbench' "
                      "AND _run_id = (SELECT run_id FROM runs ORDER BY created_at DESC LIMIT 1)")
    assert seen == [("127.0.0.1",)]


def test_a_service_file_names_the_server(server: EmbeddedCluster, tmp_path: Path) -> None:
    services = tmp_path / "services.conf"
    services.write_text(f"[mysvc]\nhost=127.0.0.1\nport={server.port}\nuser=app\ndbname=pgknee\n")
    store = tmp_path / "s.db"
    env = {**APP_ENV, "PGSERVICEFILE": str(services)}
    r = pgknee("run", "--dsn", "service=mysvc", *RUN, "--store", str(store), env=env, cwd=tmp_path)
    assert r.code == 0, r.err
    _reached(store, server.port)
    # PGSERVICE and --target env, from a plan file: the same server
    plan = tmp_path / "plan.toml"
    plan.write_text('[target]\ntarget = "env"\n')
    r = pgknee("run", str(plan), *RUN, "--store", str(store), env={**env, "PGSERVICE": "mysvc"}, cwd=tmp_path)
    assert r.code == 0, r.err
    _reached(store, server.port)


def test_target_env_follows_pghost_and_friends(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "e.db"
    env = {**APP_ENV, "PGHOST": "127.0.0.1", "PGPORT": str(server.port), "PGUSER": "app", "PGDATABASE": "pgknee"}
    r = pgknee("run", "--target", "env", *RUN, "--store", str(store), env=env, cwd=tmp_path)
    assert r.code == 0, r.err
    _reached(store, server.port)
    # a DSN as well, or no server in the environment: one line each, exit 2, nothing stored
    both = pgknee("run", "--target", "env", "--dsn", "host=127.0.0.1", *RUN, "--store", str(store), env=env)
    assert both.code == 2 and both.err.strip().count("\n") == 0 and "--target env" in both.err
    none = pgknee("run", "--target", "env", *RUN, "--store", str(store), env={"PGHOST": "", "PGSERVICE": ""})
    assert none.code == 2 and none.err.strip().count("\n") == 0 and "set PGHOST" in none.err
    assert len(sql(store, "SELECT run_id FROM runs")) == 1


def test_two_hosts_read_write_sslsni_and_keepalives(server: EmbeddedCluster, tmp_path: Path) -> None:
    """One host is a closed port (first, or in random order: load_balance_hosts, libpq 16+): libpq
    goes on to the other, and every client pgknee starts is given the host actually reached (so
    pgbench's libpq 15 never sees load_balance_hosts); keywords with no PG* variable travel too."""
    store = tmp_path / "m.db"
    dsn = (f"host=127.0.0.1,127.0.0.1 port={_closed_port()},{server.port} user=app dbname=pgknee "
           "target_session_attrs=read-write load_balance_hosts=random sslsni=0 keepalives_idle=7 "
           "tcp_user_timeout=9000 connect_timeout=3")
    r = pgknee("run", "--dsn", dsn, *RUN, "--store", str(store), env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    _reached(store, server.port)


def test_a_keyword_pgbenchs_libpq_does_not_know_is_refused_before_the_run(server: EmbeddedCluster,
                                                                            tmp_path: Path) -> None:
    """psycopg's libpq (18 here) knows require_auth; pgbench's (15) does not, and would have
    connected without it: one line, exit 2, nothing stored and nothing created."""
    store = tmp_path / "a.db"
    dsn = f"host=127.0.0.1 port={server.port} user=app dbname=pgknee require_auth=scram-sha-256"
    r = pgknee("run", "--dsn", dsn, *RUN, "--schema", "bench_never", "--store", str(store), env=APP_ENV,
               cwd=tmp_path)
    if r.code == 0:  # a pgbench linked with libpq 16+ takes it, and the run works
        return
    assert r.code == 2 and r.err.strip().count("\n") == 0, r.err
    assert "pgbench's libpq does not know the connection parameter 'require_auth'" in r.err
    assert not store.exists() or sql(store, "SELECT run_id FROM runs") == []
    with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="pgknee") as conn:
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'bench_never'").fetchone() == (0,)
