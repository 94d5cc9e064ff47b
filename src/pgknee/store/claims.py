"""Who writes a run: its owner (host, pid and the pid's start time, so that a later process with
the same pid is not taken for it), whether that pgknee may be alive, and why another pgknee may
not reopen the run now (pgknee run --extend, --resume)."""

from __future__ import annotations

import os
import socket
import time

from pgknee.base.errors import PgkneeError, StoreBusy, UserError
from pgknee.model.results import RunRecord
from pgknee.system.registry import is_alive, start_time


def owner() -> str:
    """Which pgknee writes a run: host, pid and the pid's start time (a later process with the
    same pid is not it)."""
    me = os.getpid()
    return f"{socket.gethostname()}:{me}:{start_time(me)}"


# a run's pgknee on another host not heard from for this long is gone: longer than a step that
# writes nothing (its pg_stat_activity samples are written as it runs, when sampling is on)
STALE_RUN_S = 900.0


def owner_alive(text: str | None, heartbeat_at: float | None = None) -> tuple[str, int] | None:
    """(host, pid) of the pgknee a run's owner names when it may be alive: it runs on this host
    (pid and start time match), or on another host and wrote to the run within STALE_RUN_S (or
    before pgknee kept the time, when it cannot tell)."""
    parts = (text or "").rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None  # a run written before pgknee recorded owners
    host, pid = parts[0], int(parts[1])
    if host != socket.gethostname():
        return (host, pid) if heartbeat_at is None or time.time() - heartbeat_at < STALE_RUN_S else None
    return (host, pid) if is_alive(pid, parts[2] if parts[2] != "None" else None) else None


def claim_refusal(run_id: str, status: str, run_owner: str | None, *, resume: bool,
                  heartbeat_at: float | None = None) -> PgkneeError | None:
    """Why another pgknee may not reopen a run now, or None: a pgknee that is alive writes it;
    or (--extend) it was left 'running' by one that is gone (--resume takes such a run over)."""
    if status != "running":
        return None
    holder = owner_alive(run_owner, heartbeat_at)
    if holder is not None:
        return StoreBusy(f"run {run_id} is being written by another pgknee (pid {holder[1]} on {holder[0]})",
                         "wait until it ends ('pgknee runs' shows the run's status), or stop that pgknee first")
    if resume:
        return None
    return UserError(f"run {run_id} was left 'running' by a pgknee that is gone: it cannot be extended as it is",
                     f"'pgknee run --resume {run_id}' runs its missing steps first")


def refusal_for(run: RunRecord, *, resume: bool) -> PgkneeError | None:
    return claim_refusal(run.run_id, run.status, run.owner, resume=resume, heartbeat_at=run.heartbeat_at)
