"""Where agents and their coordinator meet: the store (format 13). An agent registers and beats
its heart in `agents`; a coordinator takes the agents it needs for its run, gives each its part
of a step in `agent_tasks`, sets their common start, and reads back what each measured. Every
call is one short transaction of its own (several processes on several hosts share the store);
times are epoch seconds on the store's clock (`clock`). The statements are store/sql/coord_*.sql."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from pgknee.store.db import Store
from pgknee.store.sql import load, real_or_none

HEARTBEAT_S = 1.0  # how often an agent says it is alive
STALE_S = 10.0  # an agent not heard from for this long is gone (killed, its host or network lost)


def clock(store: Store) -> float:
    """The store's time: its PostgreSQL server's, or this host's for a file every process reads here."""
    if store.postgres:
        return float(store.db.execute(load("coord_clock")).fetchone()[0])
    return time.time()


def clock_offset(store: Store, probes: int = 7) -> tuple[float, float]:
    """(the store's clock minus this host's, its error bound), in seconds: NTP's midpoint method,
    the probe with the shortest round trip kept."""
    if not store.postgres:
        return 0.0, 0.0
    best = (0.0, float("inf"))
    for _ in range(probes):
        t0 = time.time()
        server = clock(store)
        t1 = time.time()
        if (t1 - t0) / 2 < best[1]:
            best = (server - (t0 + t1) / 2, (t1 - t0) / 2)
    return best


@dataclass(frozen=True)
class AgentRow:
    name: str
    host: str
    pid: int
    cpus: int
    pgbench: str
    pgbench_version: int
    rtt_ms: float | None
    clock_offset_ms: float
    clock_error_ms: float
    registered_at: float
    heartbeat_at: float
    run_id: str | None
    state: str


def register(store: Store, row: AgentRow) -> None:
    """An agent, waiting for a run (a name registered before is taken over: the same pod again)."""
    with store.transaction():
        store.db.execute(load("coord_register"), {k: getattr(row, k) for k in AgentRow.__dataclass_fields__})


def heartbeat(store: Store, name: str, pid: int) -> str | None:
    """The agent is alive; returns its state (None: its row is gone, or another process took its name)."""
    with store.transaction():
        store.db.execute(load("coord_heartbeat"), (clock(store), name, pid))
        row = store.db.execute(load("coord_agent_state"), (name, pid)).fetchone()
    return None if row is None else str(row[0])


def leave(store: Store, name: str, pid: int) -> None:
    """The agent exits: no coordinator may take it any more."""
    with store.transaction():
        store.db.execute(load("coord_leave"), (name, pid))


def agents(store: Store, names: list[str] | None = None) -> list[AgentRow]:
    rows = store.db.execute(load("coord_agents")).fetchall()
    out = [AgentRow(*r) for r in rows]
    return [a for a in out if names is None or a.name in names]


def take(store: Store, run_id: str, count: int) -> list[AgentRow]:
    """Up to `count` waiting agents heard from lately, taken for the run (none another run has)."""
    now = clock(store)
    with store.transaction():
        free = [a for a in agents(store) if a.state == "waiting" and now - a.heartbeat_at < STALE_S]
        taken = []
        for a in free[:count]:
            cur = store.db.execute(load("coord_take"), (run_id, a.name))
            if cur.rowcount == 1:
                taken.append(a)
    return taken


def release(store: Store, run_id: str) -> None:
    """The run is over: its agents may go (each exits once it reads this)."""
    with store.transaction():
        store.db.execute(load("coord_release"), (run_id,))
        store.db.execute(load("coord_cancel_run_tasks"), (clock(store), run_id))


def assign(store: Store, run_id: str, step_id: int, phase: str, specs: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Each agent's part of a step (its spec); returns the tasks' ids by agent."""
    now = clock(store)
    out = {}
    with store.transaction():
        for agent, spec in specs.items():
            row = store.db.execute(load("coord_assign"), (run_id, step_id, agent, phase, json.dumps(spec),
                                                          now)).fetchall()
            out[agent] = int(row[0][0])
    return out


def cancel(store: Store, task_ids: list[int]) -> None:
    """Tasks no longer wanted (their step failed): an agent waiting to start one goes back to waiting."""
    with store.transaction():
        for t in task_ids:
            store.db.execute(load("coord_cancel_task"), (clock(store), t))


def start_at(store: Store, task_ids: list[int], at: float) -> None:
    with store.transaction():
        for t in task_ids:
            store.db.execute(load("coord_start_at"), (at, clock(store), t))


@dataclass(frozen=True)
class Task:
    task_id: int
    run_id: str
    step_id: int
    agent: str
    phase: str
    spec: dict[str, Any]
    state: str
    start_at: float | None
    result: dict[str, Any] | None
    reason: str | None
    progress: list[dict[str, Any]]  # pgbench's progress lines so far


def _task(r: Any) -> Task:
    """A task from its row: the columns of coord_tasks.sql and coord_next_task.sql, in their order."""
    return Task(int(r[0]), str(r[1]), int(r[2]), str(r[3]), str(r[4]), json.loads(r[5]), str(r[6]),
                real_or_none(r[7]), json.loads(r[8]) if r[8] else None, r[9],
                json.loads(r[10]) if r[10] else [])


def tasks(store: Store, task_ids: list[int]) -> list[Task]:
    return [_task(r) for r in store.db.execute(load("coord_tasks", tasks=len(task_ids)), task_ids).fetchall()]


def next_task(store: Store, agent: str) -> Task | None:
    """The agent's oldest task not yet finished."""
    row = store.db.execute(load("coord_next_task"), (agent,)).fetchone()
    return None if row is None else _task(row)


def task_state(store: Store, task_id: int) -> tuple[str, float | None]:
    row = store.db.execute(load("coord_task_state"), (task_id,)).fetchone()
    return (str(row[0]), real_or_none(row[1])) if row else ("cancelled", None)


def progress(store: Store, task_id: int, points: list[dict[str, Any]]) -> None:
    """pgbench's progress lines so far (the agent's heartbeat writes them while it runs)."""
    with store.transaction():
        store.db.execute(load("coord_progress"), (json.dumps(points), task_id))


def report(store: Store, task_id: int, state: str, *, result: dict[str, Any] | None = None,
           reason: str | None = None) -> None:
    """An agent's word on its task: ready, running, done (with what it measured) or failed (why)."""
    with store.transaction():
        store.db.execute(load("coord_report"), (state, json.dumps(result) if result is not None else None, reason,
                                                clock(store), task_id))
