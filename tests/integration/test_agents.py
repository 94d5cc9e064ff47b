"""Agents on other hosts, for real: each `pgknee agent` is a process in a network namespace of its
own, made by the test, reaching the server and the PostgreSQL store through a veth pair (a
real network path, its own addresses, routes and round trips); the coordinator
(`pgknee run --agents 2`) runs here. The server and the store are clusters the test starts.

Checked against what pgknee does not control: the merged TPS against the server's own commit
counter, the merged percentiles against the agents' raw pgbench logs concatenated, the agents'
shares against the step's clients. Needs root (namespaces): skipped with the reason otherwise."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, SCALE, dsn_of, pgknee
from .netlab import KEEPER, PASSWORD, Lab, agent


def _raw_latencies(logs: Path, step_id: int) -> np.ndarray:
    values = []
    for f in sorted(logs.glob(f"*.step-{step_id}.bench.gen-*/*")):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 6 and parts[2].isdigit():
                values.append(int(parts[2]))
    return np.array(values, dtype=np.float64) / 1000.0


@pytest.mark.slow  # two agents in network namespaces and their coordinator: 17 s (make slow)
def test_two_agents_in_namespaces_share_a_run_merged_as_one(lab: Lab, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    agents = [agent(lab, i, logs) for i in range(2)]
    env = {"PGKNEE_STORE_DSN": lab.store_dsn(), "PGPASSWORD": PASSWORD}
    try:
        r = pgknee("run", "--dsn", lab.dsn(), "--agents", "2", "--agent-wait", "60s", "--clients", "2,4",
                   "--duration", "3s", "--scale", SCALE, "--log-sampling-rate", "1", *QUICK, env=env)
        outs = [a.communicate(timeout=60) for a in agents]
    finally:
        for a in agents:
            if a.poll() is None:
                a.send_signal(signal.SIGTERM)
                a.communicate(timeout=30)
    assert r.code == 0, r.err
    assert [a.returncode for a in agents] == [0, 0], outs
    # the agents' progress, summed, shown live as a local pgbench's is ("  1 s: 4,321 tps")
    assert re.search(r"^  \d+ s: [\d,]+ tps$", r.err, re.M), r.err
    assert all("the run is over" in out for out, _ in outs)
    assert PASSWORD not in r.out + r.err and KEEPER not in r.out + r.err
    with psycopg.connect(lab.store_dsn()) as conn:
        steps = conn.execute("SELECT step_id, clients, status, tps, tps_db, lat_p50_ms, lat_p95_ms, lat_p99_ms, "
                             "transactions FROM pgknee.steps ORDER BY seq").fetchall()
        shares = conn.execute("SELECT step_id, agent, clients, transactions, host, rtt_ms, bench_start, bench_end "
                              "FROM pgknee.step_agents ORDER BY step_id, agent").fetchall()
        secrets = conn.execute("SELECT count(*) FROM pgknee.agent_tasks WHERE spec_json LIKE %s OR result_json "
                               "LIKE %s", (f"%{PASSWORD}%", f"%{PASSWORD}%")).fetchone()
    assert secrets == (0,)
    assert [(c, st) for _, c, st, *_ in steps] == [(2, "completed"), (4, "completed")]
    for step_id, clients, _, tps, tps_db, p50, p95, p99, tx in steps:
        mine = [s for s in shares if s[0] == step_id]
        assert [s[1] for s in mine] == ["gen-0", "gen-1"] and sum(s[2] for s in mine) == clients
        assert sum(s[3] for s in mine) == tx  # the step's transactions are the agents', summed exactly
        assert all(s[5] is not None and s[5] > 0 for s in mine)  # each measured its round trip through its veth
        # the merged TPS against the server's own commit counter
        assert abs(tps - tps_db) / tps_db < 0.02, (tps, tps_db)
        # the merged percentiles against the raw logs of both agents, concatenated
        raw = _raw_latencies(logs, step_id)
        assert raw.size == tx
        for got, q in ((p50, 50), (p95, 95), (p99, 99)):
            want = float(np.percentile(raw, q))
            assert abs(got - want) / want < 0.01, (q, got, want)
        starts, ends = [s[6] for s in mine], [s[7] for s in mine]
        assert max(starts) - min(starts) < 0.5 and max(ends) - min(ends) < 0.5  # one common window
    # the same run, reported from the PostgreSQL store
    r = pgknee("show", "last", env=env)
    assert r.code == 0, r.err
    assert "Agents: each one's share" in r.out and "gen-0" in r.out and "gen-1" in r.out
    assert "agents-agree" in r.out


def test_agents_that_never_come_are_named_before_the_sweep(server: EmbeddedCluster, tmp_path: Path) -> None:

    store = tmp_path / "a.db"
    r = pgknee("agent", "--name", "gen-9", "--store", str(store), "--wait", "0.5s", env=APP_ENV)
    assert r.code == 2 and "no run took it within 0 s" in r.err and "Traceback" not in r.err, r.err
    t0 = time.monotonic()
    r = pgknee("run", "--dsn", dsn_of(server), "--agents", "2", "--agent-wait", "1s", "--clients", "2",
               "--store", str(store), env=APP_ENV)
    assert r.code == 2, r.err
    lines = [ln for ln in r.err.splitlines() if ln.startswith("pgknee:")]
    assert len(lines) == 1 and "only 0 of 2 agents came within 1 s (none); 2 missing" in lines[0], r.err
    assert "gen-9 gone, last heard" in lines[0]  # the one that gave up is named, with when it was heard
    assert time.monotonic() - t0 < 30
    import sqlite3
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)  # nothing was started
    r = pgknee("run", "--agents", "2", "--clients", "2", "--store", str(store))
    assert r.code == 2 and "--agents needs --dsn" in r.err
    r = pgknee("run", "--dsn", dsn_of(server), "--agents", "2", "--rtt", "1ms", "--store", str(store), env=APP_ENV)
    assert r.code == 2 and "simulates a network hop (rtt=), which runs on this host" in r.err, r.err
