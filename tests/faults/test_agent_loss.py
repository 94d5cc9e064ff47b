"""An agent killed mid-step (kill -9: its pgbench goes with it, by the parent-death signal): the
coordinator stops hearing it, fails the step with that reason, and stops the run (the default
--on-agent-loss), the steps before kept; the other agent is released and exits 0; nothing is
left running. The agents share a file store with the coordinator here (several processes of one
host); tests/integration/test_agents.py runs them in network namespaces on a PostgreSQL store."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from integration.netlab import PASSWORD, Lab, agent
from pgknee.targets.local import EmbeddedCluster

from .conftest import (
    APP_PASSWORD,
    ENV,
    SCALE,
    assert_nothing_left,
    dsn_of,
    env_of,
    one_error_line,
    sql,
    start,
    tmp_pgknee_dirs,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def _agent(name: str, store: Path, state: Path, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pgknee", "agent", "--name", name, "--store", str(store),
                             "--wait", "120s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            env=env_of(state))


def _running(store: Path, seq: int) -> bool:
    try:
        return bool(sql(store, "SELECT 1 FROM agent_tasks t JOIN steps s USING (step_id) WHERE s.seq = ? "
                               "AND t.state = 'running' AND t.phase = 'bench'", seq))
    except Exception:  # not made yet
        return False


def test_a_killed_agent_fails_its_step_with_the_reason_and_stops_the_run(server: EmbeddedCluster, tmp_path: Path,
                                                                         state: Path) -> None:
    store = tmp_path / "agents.db"
    dirs = tmp_pgknee_dirs()
    agents = [_agent(f"gen-{i}", store, state, tmp_path) for i in range(2)]
    coordinator = start("run", "--dsn", dsn_of(server), "--schema", "bench_agent_loss", "--agents", "2",
                        "--agent-wait", "60s", "--clients", "2,2,2", "--duration", "4s", "--store", str(store),
                        "--pre", "0.2s", "--post", "0.2s", "--settle", "0.5s", "--scale", SCALE, state=state,
                        cwd=tmp_path)
    try:
        assert wait_for(lambda: _running(store, 2), 180), "step 2 never ran"
        time.sleep(0.5)
        agents[1].send_signal(signal.SIGKILL)
        t0 = time.monotonic()
        out, err = coordinator.communicate(timeout=180)
        noticed = time.monotonic() - t0
        first_out, _ = agents[0].communicate(timeout=60)
    finally:
        for p in (*agents, coordinator):
            if p.poll() is None:
                p.kill()
            for pipe in (p.stdout, p.stderr):  # the killed agent's too
                if pipe is not None and not pipe.closed:
                    pipe.close()
            p.wait()
    assert coordinator.returncode == 4, err
    line = one_error_line(err)
    assert "the run stops: agents: agent gen-1 stopped answering (last heard" in line, line
    assert noticed < 60, noticed
    steps = sql(store, "SELECT seq, status, status_reason FROM steps ORDER BY seq")
    assert [(s, st) for s, st, _ in steps] == [(1, "completed"), (2, "failed")], steps
    assert "agent gen-1 stopped answering" in str(steps[1][2])
    assert sql(store, "SELECT status FROM runs") == [("failed",)]
    assert agents[0].returncode == 0 and "the run is over" in first_out
    assert APP_PASSWORD not in out + err
    assert_nothing_left(state, [coordinator.pid, *(a.pid for a in agents)], dirs)


def test_with_on_agent_loss_continue_the_other_agent_runs_the_next_steps(server: EmbeddedCluster, tmp_path: Path,
                                                                         state: Path) -> None:
    store = tmp_path / "agents.db"
    dirs = tmp_pgknee_dirs()
    agents = [_agent(f"gen-{i}", store, state, tmp_path) for i in range(2)]
    coordinator = start("run", "--dsn", dsn_of(server), "--schema", "bench_agent_loss", "--agents", "2",
                        "--agent-wait", "60s", "--on-agent-loss", "continue", "--clients", "2,2,2", "--duration", "3s",
                        "--store", str(store), "--pre", "0.2s", "--post", "0.2s", "--settle", "0.5s", "--scale", SCALE,
                        state=state, cwd=tmp_path)
    try:
        assert wait_for(lambda: _running(store, 2), 180), "step 2 never ran"
        time.sleep(0.5)
        agents[1].send_signal(signal.SIGKILL)
        out, err = coordinator.communicate(timeout=180)
        first_out, _ = agents[0].communicate(timeout=60)
    finally:
        for p in (*agents, coordinator):
            if p.poll() is None:
                p.kill()
            for pipe in (p.stdout, p.stderr):
                if pipe is not None and not pipe.closed:
                    pipe.close()
            p.wait()
    assert coordinator.returncode == 0, err
    assert "going on with 1 agent(s): gen-0" in err
    steps = sql(store, "SELECT seq, status FROM steps ORDER BY seq")
    assert steps == [(1, "completed"), (2, "failed"), (3, "completed")], steps
    assert sql(store, "SELECT a.agent, a.clients FROM step_agents a JOIN steps s USING (step_id) WHERE s.seq = 3") \
        == [("gen-0", 2)]  # the survivor took the step's clients
    assert agents[0].returncode == 0 and "the run is over" in first_out
    assert_nothing_left(state, [coordinator.pid, *(a.pid for a in agents)], dirs)


def test_an_agent_whose_pgbench_fails_fails_its_step_with_pgbench_s_cause(lab: Lab, tmp_path: Path) -> None:
    """A DBA terminates one agent's sessions mid-step (the agents in network namespaces: the
    server tells them apart by address). That agent's pgbench aborts (exit 2); the step fails with
    pgbench's own cause, the agent's name in front, not pgbench's closing "Run was aborted"; the
    agent lives on and the run goes on (a failing pgbench is no lost agent)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    victim = lab.address(1)
    agents = [agent(lab, i, logs) for i in range(2)]
    terminated: list[int] = []

    def terminate() -> bool:  # as the app role: a role may end its own sessions
        with psycopg.connect(lab.dsn(), password=PASSWORD, autocommit=True) as conn:
            (n,) = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE client_addr = "
                                "%s AND application_name = 'pgbench' AND state = 'active'", (victim,)).fetchone()
        terminated.append(int(n))
        return bool(n)

    env = {**ENV, "PGKNEE_STORE_DSN": lab.store_dsn(), "PGPASSWORD": PASSWORD}
    coordinator = subprocess.Popen(
        [sys.executable, "-m", "pgknee", "run", "--dsn", lab.dsn(), "--agents", "2", "--agent-wait", "60s",
         "--clients", "2,2", "--duration", "4s", "--pre", "0.2s", "--post", "0.2s", "--settle", "0.5s", "--scale",
         SCALE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert wait_for(terminate, 180, every=0.2), "gen-1's pgbench never showed"
        out, err = coordinator.communicate(timeout=180)
        outs = [a.communicate(timeout=60) for a in agents]
    finally:
        for p in (*agents, coordinator):
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert coordinator.returncode == 0, err
    with psycopg.connect(lab.store_dsn()) as conn:
        steps = conn.execute("SELECT seq, status, status_reason FROM pgknee.steps ORDER BY seq").fetchall()
        shares = conn.execute("SELECT s.seq, a.agent, a.exit_code FROM pgknee.step_agents a JOIN pgknee.steps s "
                              "USING (step_id) ORDER BY 1, 2").fetchall()
    assert [(s, st) for s, st, _ in steps] == [(1, "failed"), (2, "completed")], steps
    reason = str(steps[0][2])
    assert reason.startswith("agents: gen-1: pgbench exit code 2: ") and "aborted in command" in reason, reason
    assert "FATAL" in reason and "Run was aborted" not in reason, reason
    assert shares == [(1, "gen-0", 0), (1, "gen-1", 2), (2, "gen-0", 0), (2, "gen-1", 0)]
    assert f"c2 rep 1: FAILED: {reason}" in err
    assert [a.returncode for a in agents] == [0, 0] and all("the run is over" in o for o, _ in outs), outs
    assert PASSWORD not in out + err
