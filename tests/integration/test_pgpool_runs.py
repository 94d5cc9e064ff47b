"""pgpool-II as a pooled variant of a run, for real: a sweep interleaved with pgbouncer's, its
pool figures, the server's commits, its CPU; its death mid-step; the refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import (
    APP_ENV,
    QUICK,
    RUN_TMP,
    SCALE,
    dsn_of,
    in_bench_phase,
    pgknee,
    pgknee_processes,
    shm_created_by,
    sql,
    superuser,
)

# runs through pgpool-II do not change with the server's major (make matrix leaves them out to stay
# inside CI's 30 minutes); tests/integration/test_pgpool.py, which logs in through it, runs on each
pytestmark = pytest.mark.once

PGB, PGP = "pooled:transaction:pool=8", "pgpool:pool=8"


def _pgpool_groups() -> list[int]:
    """Process groups of the pgpools pgknee started under this test process's TMPDIR (their main
    process names its configuration; the children take titles of their own, in the same group)."""
    out = subprocess.run(["ps", "-ww", "-eo", "pgid,args"], capture_output=True, text=True, check=True).stdout
    return [int(ln.split()[0]) for ln in out.splitlines() if f"{RUN_TMP}/pgknee-pgpool-" in ln and "pgpool.conf" in ln]


def _in_group(pgid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True, check=False).stdout
    return [int(x) for x in out.split()]


@pytest.mark.slow  # two poolers' sweeps interleaved: 30 s (make slow)
def test_pgpool_beside_pgbouncer_interleaved(server: EmbeddedCluster, tmp_path: Path) -> None:
    store, js = tmp_path / "p.db", tmp_path / "p.json"
    # a database of its own, whose commits pg_stat_database counts apart from autovacuum's visits to
    # the schemas this test process's earlier tests left in the shared one (23 tables vacuumed or
    # analyzed in one step took a fresh clone's run 64 commits over, 4.6% of the step's)
    with superuser(server) as c:
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = 'pgpool_commits'").fetchone():
            c.execute("CREATE DATABASE pgpool_commits OWNER app")
    dsn = f"postgresql://app@127.0.0.1:{server.port}/pgpool_commits"
    r = pgknee("run", "--dsn", dsn, "--schema", "bench_pgpool", "--protocol", "extended",
               "--variant", PGB, "--variant", PGP, "--clients", "2,8", "--duration", "3s", "--warmup", "1s",
               "--scale", SCALE, "--store", str(store), "--json", str(js), *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    out = " ".join(r.out.split())
    assert "through pgpool-II, pool 8 (num_init_children 8 + 1 for pgknee's console, max_pool 1" in out
    steps = sql(store, "SELECT step_id, variant, clients, pooler_kind, pool_mode, pool_size, status, transactions "
                       "FROM steps ORDER BY seq")
    assert [s[1] for s in steps] == [PGB, PGP, PGB, PGP]  # interleaved, client count by client count
    env = dict(sql(store, "SELECT key, value FROM run_environment"))
    assert env["pgpool.version"].startswith("4.") and env["pgpool.path"].endswith("pgpool")
    for sid, variant, clients, kind, mode, size, status, txns in steps:
        assert status == "completed", (variant, clients)
        if variant != PGP:
            continue
        assert (kind, mode, size) == ("pgpool", "session", 8)
        facts = dict(sql(store, "SELECT name, value FROM step_pooler WHERE step_id = ?", sid))
        assert facts["kind"] == "pgpool" and facts["setting.num_init_children"] == "9"
        assert facts["setting.max_pool"] == "1" and float(facts["delta.cpu_seconds"]) > 0
        samples = sql(store, "SELECT cl_active, cl_waiting, sv_active + sv_idle FROM pooler_samples "
                             "WHERE step_id = ? AND _phase = 'bench'", sid)
        assert len(samples) >= 8
        # while pgbench runs (not while it connects or after it ends), every client is on a child of its
        # own and none waits; the server connections are the busy children's and one more: pgbench's
        # first connection (it reads the server's settings before its clients connect) left its
        # server connection cached in a child
        at = [i for i, x in enumerate(samples) if x[0] == clients]
        assert at, samples
        # from the first sample with every client on to the last: a loaded machine's pgbench took 1.5 s of
        # a 4 s bench to connect its 8 clients through pgpool-II (make slow beside the captured applications)
        running = samples[at[0]:at[-1] + 1]
        full = [x for x in running if x[0] == clients]
        assert len(full) >= 0.7 * len(running) and len(full) >= len(samples) / 3, samples
        assert all(w == 0 and clients <= sv <= clients + 1 for _a, w, sv in full), (clients, full)
        # the server's commits over the bench window, pgknee's own statistics reads taken out, against
        # pgbench's transactions: pgpool started again after the warm-up, so its cached connections'
        # commits do not reach the bench. Besides the transactions (the server's log of statements,
        # read once): each server session commits as it starts and at pgpool's SELECT version(), each
        # client's logout at pgpool's reset (DISCARD ALL), pgbench's first connection's too: about 3
        # for each of pgpool's children that opened a server session, at most all 9 of them, whatever
        # the clients (at 8 clients 30 to 39 seen, loaded or not; at 2 clients 5 to 7 mostly, whose
        # sessions a child's cached connection may serve, but 25 once in a fresh clone's make slow:
        # which child takes a client is the kernel's choice), and autovacuum's: 1.5 to 2.8 per table
        # it vacuumed or analyzed (measured; its counts move when a table is done, its commits as it goes)
        ((tps, tps_db),) = sql(store, "SELECT tps, tps_db FROM steps WHERE step_id = ?", sid)
        pg = dict(sql(store, "SELECT name, delta FROM step_pg_stat_database WHERE step_id = ?", sid))
        tables = pg.get("autovacuum_count", 0) + pg.get("autoanalyze_count", 0)
        extra = tps_db * txns / tps - txns  # type: ignore[operator]
        children = int(facts["setting.num_init_children"])
        assert clients <= extra <= 3 * children + 3 * tables + 5 + 0.005 * txns, (clients, extra, tables, txns)
        cpu = sql(store, "SELECT count(*) FROM os_samples WHERE step_id = ? AND pooler_cpu_pct IS NOT NULL", sid)
        assert cpu[0][0] >= 2
    doc = json.loads(js.read_text())
    rows = {(x["variant"], x["clients"]): x for x in doc["summary"]}
    checks = {c["name"]: c["status"] for c in rows[(PGP, 8)]["checks"]}
    assert checks["pooler-occupancy"] == "n/a" and checks["pooler-bound"] in ("ok", "warn")
    # the bench phase's mean: 8 while pgbench runs (the samples above), less in the last one or two
    # of the 3 s step's 12-13 as its clients log out (7.3 and 6.8 measured under make test's load)
    assert 6.0 <= rows[(PGP, 8)]["pooler"]["cl_active"]["median"] <= 8.0
    assert rows[(PGP, 8)]["pooler"]["cl_waiting"]["median"] == 0.0
    shown = " ".join(pgknee("show", "last", "--store", str(store), "--no-waits", cwd=tmp_path).out.split())
    assert "Pooler — pgpool:pool=8: managed pgpool-II, 8 children, a client session each" in shown
    assert "pgpool-II CPU, all its processes, % of one core" in shown
    assert pgknee_processes() == [] and _pgpool_groups() == []
    assert not list(Path(RUN_TMP).glob("pgknee-pgpool-*"))


def test_pgpool_main_killed_mid_step_leaves_no_child(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "k.db"

    def kill_its_main_process() -> list[int]:
        groups = _pgpool_groups()
        for pgid in groups:
            os.kill(pgid, signal.SIGKILL)  # the main process alone: its children stay, orphaned
        return groups

    with in_bench_phase(kill_its_main_process) as killed:
        r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_pgpool", "--protocol", "extended",
                   "--variant", "pgpool:pool=4", "--clients", "4,4", "--duration", "3s", "--scale", SCALE,
                   "--store", str(store), *QUICK, env=APP_ENV, cwd=tmp_path)
    assert len(killed) == 1, "pgpool was not seen in the bench phase of step 1"
    # the children went on serving their clients to the end of the step (unlike pgbouncer's, whose
    # clients lose their connections with it), so the step's measurement stands, as pgbench's
    # own exit says; the next step has a pgpool of its own
    steps = sql(store, "SELECT seq, status, failed FROM steps ORDER BY seq")
    assert steps == [(1, "completed", 0), (2, "completed", 0)], (steps, r.err)
    assert r.code == 0, r.err
    assert _in_group(killed[0]) == [], "the children of the killed pgpool were left running"
    # and its shared memory, which only its own shutdown would have removed, is gone too
    assert shm_created_by({killed[0]}) == [], "the killed pgpool's shared memory was left"
    assert pgknee_processes() == [] and _pgpool_groups() == []


def test_pgpool_refusals(tmp_path: Path) -> None:
    store = tmp_path / "x.db"
    for args, code, words in (
            (["--clients", "16", "--variant", "pgpool:pool=8"], 2,
             "pgpool-II serves each client session on a child of its own"),
            (["--clients", "4", "--variant", "pgpool:pool=8:mode=transaction"], 2,
             "mode set a pgbouncer; pgpool-II takes pool= (its children) and placement= only"),
            (["--clients", "4", "--variant", "pgpool:pool=8:processes=2"], 2, "processes set a pgbouncer"),
            (["--clients", "4", "--variant", "pgpool:pool=8", "--pgpool", "/nonexistent/pgpool"], 6,
             "--pgpool /nonexistent/pgpool is not an executable file")):
        r = pgknee("run", "--protocol", "extended", *args, "--store", str(store), cwd=tmp_path)
        assert r.code == code and words in r.err and r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    # (a pgpool larger than the server's max_connections: tests/unit/test_capacity.py)
    assert not store.exists() and pgknee_processes() == [] and _pgpool_groups() == []
