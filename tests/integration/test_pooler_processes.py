"""Several pgbouncer processes on one port (processes=N, so_reuseport), for real: both carry
traffic, each one's CPU and pools are stored, their SHOW STATS sum to the server's commits, the
answer to "how many processes", one of them killed mid-step, and the refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, RUN_TMP, SCALE, dsn_of, in_bench_phase, pgknee, pgknee_processes, sql

# the pgbouncer processes, their sampling and their refusals do not depend on the server's major
# (make matrix leaves them out to stay inside CI's 30 minutes)
pytestmark = pytest.mark.once

ONE, TWO = "pooled:transaction:pool=8:processes=1", "pooled:transaction:pool=8:processes=2"


@pytest.mark.slow
def test_one_and_two_pgbouncer_processes_at_64_and_256_clients(server: EmbeddedCluster, tmp_path: Path) -> None:
    store, js = tmp_path / "p.db", tmp_path / "p.json"
    # 6 s steps: 256 clients through one process, each authenticated with SCRAM, spent a whole 4 s
    # step connecting beside the applications' test on two CPUs (no transaction: the step fails)
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_procs", "--workload", "select-only",
               "--protocol", "extended", "--variant", "pooled:transaction:pool=8:processes=1,2",
               "--clients", "64,256", "--duration", "6s", "--warmup", "2s", "--scale", "1",
               "--store", str(store), "--json", str(js), *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    out = " ".join(r.out.split())  # as printed, wrapped to the terminal
    assert "2 processes on one port (each its own pool: the server sees up to 16 connections)" in out
    said_run = " ".join((r.out + r.err).split())
    assert "has no peering" in said_run or "are peers" in said_run  # what a cancel request meets
    steps = sql(store, "SELECT step_id, variant, clients, pool_processes, status, transactions FROM steps")
    assert sorted((s[1], s[2], s[3], s[4]) for s in steps) == [
        (ONE, 64, 1, "completed"), (ONE, 256, 1, "completed"), (TWO, 64, 2, "completed"), (TWO, 256, 2, "completed")]
    for sid, variant, clients, n, _status, txns in steps:
        facts = dict(sql(store, "SELECT name, value FROM step_pooler WHERE step_id = ?", sid))
        total = float(facts["delta.total_xact_count"])
        commits = sql(store, "SELECT delta FROM step_pg_stat_database WHERE step_id = ? AND name = 'xact_commit'",
                      sid)[0][0]
        own = sql(store, "SELECT value FROM step_facts WHERE step_id = ? AND name = 'own.commits'", sid)[0][0]
        # pgknee's statistics reads and samplers: about 13 a second here (0.1 s sampling), never 60
        assert 0 < own < 60 * 6, own  # type: ignore[operator]
        # the processes' transactions, summed, are the server's commits less pgknee's own, but for
        # a few run beside the workload's transactions (18-40 a step here, with 8 or 16 server
        # connections; pgbench's scale query one of them): a count, not a share of the step
        work = commits - own  # type: ignore[operator]
        assert 0 <= work - total <= 0.005 * work + 4 * 8 * n + 8, (variant, clients, total, commits, own)
        assert abs(total - txns) / txns < 0.02  # type: ignore[operator]
        cpu = sql(store, "SELECT process, count(*), avg(cpu_user_pct), avg(cpu_system_pct), max(sv_active) "
                         "FROM pooler_process_samples WHERE step_id = ? AND _phase = 'bench' "
                         "AND cpu_user_pct IS NOT NULL GROUP BY process ORDER BY process", sid)
        assert [c[0] for c in cpu] == list(range(1, n + 1)), cpu  # every process's CPU, user and system
        assert all(c[1] >= 5 and c[2] + c[3] > 1.0 and c[4] <= 8 for c in cpu), cpu  # each its own pool of 8
        if n == 2:
            each = [float(facts[f"process.{i}.total_xact_count"]) for i in (1, 2)]
            assert sum(each) == pytest.approx(total)
            # both carry traffic: the kernel spreads connections by a hash of their addresses
            assert all(0.2 < x / total < 0.8 for x in each), each
    doc = json.loads(js.read_text())
    for row in doc["summary"]:
        checks = {c["name"]: c for c in row["checks"]}
        assert checks["pooler-bound"]["status"] in ("ok", "warn") and checks["pooler-bound"]["value"] > 0
    rec = pgknee("recommend", "last", "--store", str(store), cwd=tmp_path)
    assert rec.code == 0, rec.err
    said = " ".join(rec.out.split())
    assert "pooled:transaction:pool=8:processes=1,2 at 256 clients: " in said, said
    assert "by processes: 1 process: " in said and "; 2 processes: " in said
    shown = " ".join(pgknee("show", "last", "--store", str(store), "--no-waits", cwd=tmp_path).out.split())
    assert "pool 8 in each of 2 processes on one port" in shown
    assert "process 2: CPU user / system %" in shown and "process 2: share of transactions %" in shown
    assert pgknee_processes() == []


def _pgbouncer_processes() -> list[tuple[int, str]]:
    """(pid, ini) of the pgbouncers pgknee started under this test process's TMPDIR."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [(int(ln.split()[0]), ln.split()[-1]) for ln in out.splitlines()
            if f"{RUN_TMP}/pgknee-pgbouncer-" in ln and ln.rstrip().endswith(".ini")]


def test_killing_one_of_two_processes_fails_that_step_only(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "k.db"

    def kill_the_second() -> list[int]:
        pids = [pid for pid, ini in _pgbouncer_processes() if ini.endswith("pgbouncer-2.ini")]
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        return pids

    with in_bench_phase(kill_the_second) as killed:
        r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_pooled", "--protocol", "extended",
                   "--variant", "pooled:pool=2:processes=2", "--clients", "16,16", "--duration", "3s", "--scale", SCALE,
                   "--store", str(store), *QUICK, env=APP_ENV, cwd=tmp_path)
    assert len(killed) == 1, "the second pgbouncer process was not seen in the bench phase of step 1"
    steps = sql(store, "SELECT seq, status, status_reason FROM steps ORDER BY seq")
    assert steps[0][1] == "failed", (steps, r.err)
    assert f"process 2 of 2 (pid {killed[0]}) exited" in str(steps[0][2]), steps
    assert steps[1][1] == "completed", (steps, r.err)  # two new processes for the next step
    assert r.code == 0, r.err
    assert pgknee_processes() == [] and _pgbouncer_processes() == []
    assert not list(Path(RUN_TMP).glob("pgknee-pgbouncer-*"))


def test_processes_refusals(tmp_path: Path) -> None:
    """One line each, exit 2, no store and nothing left running."""
    store = tmp_path / "x.db"
    for variant, words in (("pooled:pool=8:processes=0", "processes='0' in variant"),
                           ("pooled:pool=8:processes=65", "must be a whole number from 1 to 64"),
                           ("pooled:pool=8:processes=two", "processes='two'")):
        r = pgknee("run", "--protocol", "extended", "--variant", variant, "--store", str(store), cwd=tmp_path)
        assert r.code == 2 and words in r.err and r.err.count("\n") == 1 and "Traceback" not in r.err, r.err
    r = pgknee("run", "--variant", "pooled-external:processes=2", "--pooler-dsn", "host=x", "--store", str(store),
               cwd=tmp_path)
    assert r.code == 2 and "processes set a pgbouncer that pgknee starts" in r.err, r.err
    # (processes whose pools the server's max_connections cannot hold: tests/unit/test_capacity.py)
    assert not store.exists() and pgknee_processes() == [] and _pgbouncer_processes() == []
