"""The server's machine on a real server reached over TCP (the user's server, as pgknee sees a
remote one): its CPUs read through SQL by a superuser, unknown (and every CPU line withheld) for a
role that may not read /proc, given by --server-cpus, and a managed service recognised."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from pgknee.collect.osproc import read_meminfo
from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, dsn_of, pgknee, sql, workload_tps_db

RUN = ("--clients", "2", "--duration", "1s", "--scale", "0.1", "--quiet", "--no-waits", "--recommend",
       "--sample-interval", "0", *QUICK)


def _env(store: Path) -> dict[str, str]:
    return {str(k): str(v) for k, v in sql(store, "SELECT key, value FROM run_environment WHERE key LIKE 'server.%'")}


def _superuser(server: EmbeddedCluster) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="pgknee", autocommit=True)


def test_a_superuser_reads_the_servers_proc_through_sql(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    r = pgknee("run", "--dsn", dsn_of(server, "pgknee"), "--schema", "bench_machine", "--store", str(store), *RUN,
               "--os-interval", "0.2s", "--duration", "2s", env={"PGPASSWORD": server.password}, cwd=tmp_path)
    assert r.code == 0, r.err
    env = _env(store)
    cpus = len(os.sched_getaffinity(0))  # the server runs here: its machine is this one (narrowed as pgknee is)
    assert env["server.machine.cpus"] == str(cpus) and cpus <= (os.cpu_count() or 1)
    assert env["server.machine.cpus_source"] == "pg_read_file /proc"
    assert env["server.machine.mem_gb"] == f"{read_meminfo()['MemTotal'] / 2**20:.1f}"
    assert "server.managed" not in env
    assert f"server: {cpus} CPUs (pg_read_file /proc), {env['server.machine.mem_gb']} GB" in r.out
    assert f"{2 * cpus} ({cpus} server cores: pg_read_file /proc; 0 spindles)" in r.out
    # its OS, sampled per step through SQL on a connection of pgknee's own
    assert env["server.os"] == "pg_read_file /proc every 0.2 s"
    rows = sql(store, "SELECT _phase, cpu_user, cpu_system, cpu_idle, cpu_user + cpu_nice + cpu_system + cpu_iowait "
                      "+ cpu_irq + cpu_steal + cpu_idle, mem_total_kb, mem_available_kb, ctx_per_s, procs_running, "
                      "net_rx_bps FROM server_os_samples")
    bench = [x for x in rows if x[0] == "bench"]
    assert len(bench) >= 3, rows
    for _, user, system, idle, total, mem_total, mem_available, ctx, running, net in rows:
        assert 0 <= user <= 100 and 0 <= system <= 100 and 0 <= idle <= 100 and abs(total - 100) < 0.01
        assert mem_total == read_meminfo()["MemTotal"] and 0 < mem_available <= mem_total
        assert ctx > 0 and running >= 1 and net >= 0
    assert max(100 - x[3] for x in bench) > 10  # pgbench and the server were busy on this machine
    assert "System — the server: " in r.out and "Run queue (mean runnable)" in r.out
    ((sid, status, tps),) = sql(store, "SELECT step_id, status, tps FROM steps")
    assert status == "completed" and abs(workload_tps_db(store, sid) / float(tps) - 1) < 0.05  # type: ignore[arg-type]  # its reads left out


def test_a_role_that_may_not_read_proc_gets_unknown_and_every_cpu_line_withheld(server: EmbeddedCluster,
                                                                                tmp_path: Path) -> None:
    store = tmp_path / "u.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_machine_app", "--store", str(store), *RUN,
               env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    env = _env(store)
    assert "server.machine.cpus" not in env
    assert env["server.machine.cpus_source"].startswith("unknown: pg_read_file is not allowed to this role")
    assert "server: CPUs unknown (pg_read_file is not allowed to this role" in r.out
    assert "withheld: server CPUs unknown (pg_read_file is not allowed" in r.out and "give --server-cpus N" in r.out
    size = pgknee("size", "--tps", "100", "--latency", "10ms", "--run", "last", "--store", str(store))
    assert size.code == 2 and "server CPUs are unknown" in size.err and "give --server-cpus N" in size.err
    # told: the figure and its source
    told = tmp_path / "t.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_machine_app", "--store", str(told), *RUN,
               "--server-cpus", "4", "--server-memory", "16GB", env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    env = _env(told)
    assert env["server.machine.cpus"] == "4" and env["server.machine.cpus_source"] == "--server-cpus"
    assert env["server.machine.mem_gb"] == "16.0" and env["server.machine.mem_source"] == "--server-memory"
    assert "server: 4 CPUs (--server-cpus), 16.0 GB (--server-memory)" in r.out
    assert "8 (4 server cores: --server-cpus; 0 spindles)" in r.out
    size = pgknee("size", "--tps", "100", "--latency", "10ms", "--run", "last", "--store", str(told))
    assert size.code == 0 and "(4 x 2) + 0 = 8 connections" in size.out and "--server-cpus" in size.out


@pytest.mark.parametrize(("fake", "undo", "service", "where"), [
    ("CREATE ROLE rds_superuser NOLOGIN", "DROP ROLE rds_superuser", "Amazon RDS for PostgreSQL", "CloudWatch"),
    ("ALTER ROLE app SET cloudsql.iam_authentication = on", "ALTER ROLE app RESET cloudsql.iam_authentication",
     "Google Cloud SQL for PostgreSQL", "Cloud Monitoring"),
])
def test_a_managed_service_is_recognised_and_says_where_its_figures_are(server: EmbeddedCluster, tmp_path: Path,
                                                                         fake: str, undo: str, service: str,
                                                                         where: str) -> None:
    store = tmp_path / "m.db"
    with _superuser(server) as conn:
        conn.execute(fake)
    try:
        r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_machine_app", "--store", str(store), *RUN,
                   env=APP_ENV, cwd=tmp_path)
    finally:
        with _superuser(server) as conn:
            conn.execute(undo)
    assert r.code == 0, r.err
    env = _env(store)
    assert env["server.managed"] == service and where in env["server.managed.hidden"]
    assert f"server: CPUs unknown ({service} keeps them to itself)" in r.out
    assert f"{service} keeps the host's CPU, memory, disk and network figures to itself: see {where}" in r.out
    assert "rule of thumb (cores x 2) + spindles   withheld: server CPUs unknown (" in r.out  # the cell wraps
