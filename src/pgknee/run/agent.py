"""`pgknee agent`: a load generator on a host of its own (or a Kubernetes pod). It registers in
the store (name, host, CPUs, pgbench's version, its clock's offset to the store's), beats its
heart there every second, waits to be taken by a coordinator (`pgknee run --agents N`), and runs
each part of a step it is given: pgbench with its share of the clients, started at the common
time the coordinator set (on the store's clock, corrected by the measured offset). It uploads
pgbench's exact counts, its per-transaction log folded into HdrHistogram-encoded histograms, its
progress, its own CPU and its round trip to the server, and exits 0 when the run is over.

The server's DSN is the agent's own (--dsn, $PGKNEE_DSN: the password stays on this host), else
the coordinator's as the store holds it (never with a password: this host's PGPASSWORD or
~/.pgpass gives it). pgbench starts through proc.spawn as everywhere (registered, stopped with
the agent)."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pgknee.base.errors import DbError, Interrupted, PgkneeError, UserError
from pgknee.driver.execute import execute
from pgknee.driver.histogram import to_wire
from pgknee.driver.measure import read_transaction_logs
from pgknee.driver.pgbench import (
    PgbenchRun,
    find_pgbench,
    log_files,
    parse_counts,
    parse_summary,
    pgbench_version,
    window_of,
)
from pgknee.netsim.control import RttProbe, try_probe
from pgknee.store import coord
from pgknee.store.db import Store
from pgknee.system import safefs
from pgknee.targets.base import Endpoint
from pgknee.targets.local import server_user
from pgknee.workloads.base import ScriptSource, write_scripts

POLL_S = 0.2


@dataclass(frozen=True)
class AgentOptions:
    name: str
    store: str
    dsn: str | None  # the agent's own DSN for the server (it may hold a password)
    wait_s: float  # how long it waits to be taken, and then for each next task
    keep_logs: Path | None = None  # pgbench's per-transaction logs kept there, a directory per step


def default_name() -> str:
    if os.environ.get("PGKNEE_AGENT_NAME"):
        return os.environ["PGKNEE_AGENT_NAME"]
    if os.environ.get("JOB_COMPLETION_INDEX", "").isdigit():  # a pod of a Kubernetes Indexed Job
        return f"gen-{os.environ['JOB_COMPLETION_INDEX']}"
    return socket.gethostname()


class _Heart:
    """The agent's heartbeat, on a thread and a store connection of its own; the state the store
    gives the agent (taken, done) read on each beat."""

    def __init__(self, location: str, name: str) -> None:
        self.location, self.name, self.state = location, name, "waiting"
        self.failure: BaseException | None = None
        self.running: tuple[int, list[dict[str, Any]]] | None = None  # a task's id and its progress so far
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="agent heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        store = Store(self.location)
        try:
            while not self._stop.wait(coord.HEARTBEAT_S):
                try:
                    self.state = coord.heartbeat(store, self.name, os.getpid()) or "lost"
                    running = self.running
                    if running is not None and running[1]:
                        coord.progress(store, running[0], list(running[1]))
                except (PgkneeError, sqlite3.Error, DbError) as e:  # the store away: the coordinator tells
                    self.failure = e
        finally:
            store.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def serve(opts: AgentOptions, say: Callable[[str], None]) -> int:
    store = Store(opts.store)
    path = find_pgbench()
    version_text, version_num = pgbench_version(path)
    offset, error = coord.clock_offset(store)
    coord.register(store, coord.AgentRow(
        opts.name, socket.gethostname(), os.getpid(), os.cpu_count() or 1, version_text, version_num, None,
        offset * 1000, error * 1000, coord.clock(store), coord.clock(store), None, "waiting"))
    say(f"agent {opts.name} registered in {store.label} (pgbench {version_text}, {os.cpu_count()} CPUs, clock "
        f"offset {offset * 1000:+.1f} ms ±{error * 1000:.1f}); waiting for a run")
    heart = _Heart(opts.store, opts.name)
    worker = _Worker(opts, store, path, version_num, offset, say, heart)
    try:
        return worker.loop(heart)
    finally:
        heart.close()
        worker.close()
        with contextlib.suppress(PgkneeError):  # the store gone too: its heartbeat goes stale instead
            coord.leave(store, opts.name, os.getpid())
        store.close()


class _Worker:
    def __init__(self, opts: AgentOptions, store: Store, pgbench: str, version_num: int, offset: float,
                 say: Callable[[str], None], heart: _Heart) -> None:
        self.opts, self.store, self.pgbench, self.version_num, self.offset = opts, store, pgbench, version_num, offset
        self.say, self.heart = say, heart
        self.run_as = server_user()
        self.work_dir = safefs.private_dir("pgknee-agent-", reachable_by=self.run_as)
        self.endpoints: dict[str, tuple[Endpoint, dict[str, float | None]]] = {}

    def close(self) -> None:
        safefs.remove_private_dir(self.work_dir)

    def loop(self, heart: _Heart) -> int:
        idle_since = time.monotonic()
        while True:
            if heart.state == "done":
                self.say(f"agent {self.opts.name}: the run is over")
                return 0
            if heart.state == "lost":
                raise UserError(f"agent {self.opts.name}'s row in the store was taken over by another agent of "
                                "that name", "give each agent a name of its own (--name)")
            task = coord.next_task(self.store, self.opts.name)
            if task is not None:
                self._run(task)
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > self.opts.wait_s:
                what = "no run took it" if heart.state == "waiting" else "its run gave it no more work"
                raise UserError(f"agent {self.opts.name}: {what} within {self.opts.wait_s:.0f} s",
                                "start 'pgknee run --agents N' with the same --store, or raise --wait")
            time.sleep(POLL_S)

    def _run(self, task: coord.Task) -> None:
        try:
            result = self._execute(task)
        except Interrupted:
            coord.report(self.store, task.task_id, "failed", reason=f"agent {self.opts.name} was stopped")
            raise
        except (PgkneeError, OSError) as e:
            reason = e.message if isinstance(e, PgkneeError) else f"{type(e).__name__}: {e}"
            coord.report(self.store, task.task_id, "failed", reason=f"agent {self.opts.name}: {reason}")
            self.say(f"task {task.task_id} failed: {reason}")
            return
        if result is not None:
            coord.report(self.store, task.task_id, "done", result=result)

    def _endpoint(self, spec: dict[str, Any]) -> tuple[Endpoint, dict[str, float | None]]:
        """The server as this host reaches it, and the round trip there (probed once per run) as
        a result's fields."""
        dsn = self.opts.dsn or str(spec["dsn"])
        if dsn not in self.endpoints:
            endpoint = Endpoint.resolve(dsn)
            self.endpoints[dsn] = (endpoint, _rtt_fields(try_probe(endpoint)))
        return self.endpoints[dsn]

    def _execute(self, task: coord.Task) -> dict[str, Any] | None:
        spec = task.spec
        endpoint, rtt = self._endpoint(spec)
        step_dir = safefs.make_dir(self.work_dir / f"task-{task.task_id}", owner=self.run_as)
        try:
            run = self._pgbench_run(spec, step_dir)
            env = endpoint.child_env(step_dir, self.run_as)
            coord.report(self.store, task.task_id, "ready")
            if not self._wait_for_start(task):
                return None
            coord.report(self.store, task.task_id, "running")
            cpu0, t0 = _children_cpu(), time.time()
            points: list[dict[str, Any]] = []
            self.heart.running = (task.task_id, points)
            try:
                ex = execute(run, env=env, run_as=self.run_as, cwd=step_dir,
                             on_progress=lambda p: points.append(asdict(p)))
            finally:
                self.heart.running = None
            t1, cpu = time.time(), _children_cpu() - cpu0
            result = self._result(spec, run, ex.stdout, ex.stderr, ex.exit_code, step_dir)
            result.update(**rtt, cpu_pct=100 * cpu / max(t1 - t0, 1e-9),
                          started=t0 + self.offset, ended=t1 + self.offset, progress=[asdict(p) for p in ex.progress],
                          cpus=os.cpu_count() or 1, clock_offset_ms=self.offset * 1000, host=socket.gethostname())
            self._keep(task, step_dir)
            return result
        finally:
            shutil.rmtree(step_dir, ignore_errors=True)

    def _pgbench_run(self, spec: dict[str, Any], step_dir: Path) -> PgbenchRun:
        sources = [ScriptSource(s["name"], s["filename"], s["text"], int(s["weight"])) for s in spec["scripts"]]
        scripts = write_scripts([(s, s.text) for s in sources], step_dir, self.run_as)
        return PgbenchRun(
            pgbench=self.pgbench, clients=int(spec["clients"]), threads=int(spec["threads"]),
            duration_s=int(spec["duration_s"]), protocol=str(spec["protocol"]), scripts=tuple(scripts),
            defines=tuple((str(k), str(v)) for k, v in spec["defines"]),
            log_prefix=step_dir / "log" if spec["log"] else None, max_tries=int(spec["max_tries"]),
            version_num=self.version_num, progress_s=1, log_sampling_rate=float(spec["log_sampling_rate"]),
            connect_per_txn=bool(spec["connect_per_txn"]), rate=spec.get("rate"))

    def _wait_for_start(self, task: coord.Task) -> bool:
        """Until the common start (on this host's clock: the store's less the offset); False if
        the coordinator cancelled the task meanwhile."""
        while True:
            state, at = coord.task_state(self.store, task.task_id)
            if state == "cancelled":
                return False
            if at is not None:
                delay = at - self.offset - time.time()
                if delay > 0:
                    time.sleep(delay)
                return True
            time.sleep(0.02)

    def _result(self, spec: dict[str, Any], run: PgbenchRun, stdout: str, stderr: str, exit_code: int,
                step_dir: Path) -> dict[str, Any]:
        summary = parse_summary(stdout)
        counts = parse_counts(stdout)
        out: dict[str, Any] = {"exit_code": exit_code, "stderr": stderr[-2000:], "summary": asdict(summary),
                               "counts": asdict(counts) if counts is not None else None,
                               "window_s": window_of(summary, run.duration_s)}
        logs = log_files(step_dir / "log")
        if spec["log"] and logs:
            log = read_transaction_logs(
                logs, has_lag=bool(spec.get("rate")), has_retries=self.version_num >= 150000 and run.max_tries != 1,
                opener=lambda p: os.fdopen(safefs.open_child_file(p, self.run_as), "rb"),
                think_us=int(spec["think_us"]))
            out["log"] = {"scripts": {str(k): {"latency": to_wire(t.latency), "failed": t.failed,
                                               "retried": t.retried, "retries": t.retries}
                                      for k, t in log.scripts.items()},
                          "failures": log.failures, "skipped": log.skipped, "lag": to_wire(log.lag)}
        return out

    def _keep(self, task: coord.Task, step_dir: Path) -> None:
        if self.opts.keep_logs is None:
            return
        d = self.opts.keep_logs / f"{task.run_id}.step-{task.step_id}.{task.phase}.{self.opts.name}"
        d.mkdir(parents=True, exist_ok=True)
        for p in log_files(step_dir / "log"):
            with contextlib.suppress(OSError), os.fdopen(safefs.open_child_file(p, self.run_as), "rb") as src:
                (d / p.name).write_bytes(src.read())


def _children_cpu() -> float:
    """CPU seconds of the children waited for (pgbench: the agent runs one at a time)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _rtt_fields(rtt: RttProbe | None) -> dict[str, float | None]:
    """A task result's round trip to the server: the probe's three figures, or all three None when
    it could not be probed."""
    if rtt is None:
        return {"rtt_ms": None, "rtt_p99_ms": None, "rtt_min_ms": None}
    return {"rtt_ms": rtt.median_ms, "rtt_p99_ms": rtt.p99_ms, "rtt_min_ms": rtt.min_ms}
