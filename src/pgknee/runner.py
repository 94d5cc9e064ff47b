"""Orchestration: the only module that wires target, workload, driver,
collectors and store together. Everything started goes on one ExitStack, so a
failure, Ctrl-C or SIGTERM stops pgbench, the samplers and the embedded server,
keeps every completed step in the store, and marks the run."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import platform
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psycopg

from pgknee import __version__, proc, safefs
from pgknee.collect import pgstats
from pgknee.collect.activity import ACTIVITY_COLUMNS, ActivitySampler
from pgknee.collect.memory import memory_picture
from pgknee.collect.osproc import OS_COLUMNS, OsSampler, read_meminfo
from pgknee.collect.pooler import SAMPLE_COLUMNS
from pgknee.driver.pgbench import (
    PgbenchRun,
    commits_per_transaction,
    find_pgbench,
    log_files,
    measure,
    measured_window,
    parse_progress_line,
    parse_summary,
    pgbench_version,
    pipeline_form,
    read_transaction_logs,
    with_think_time,
)
from pgknee.errors import DriverError, Interrupted, PgkneeError, TargetError, UserError
from pgknee.idle import IdleHolder
from pgknee.plan import Plan, Variant
from pgknee.pooler.lab import Poolers, StepPooler, pin_process_tree
from pgknee.store.db import Store
from pgknee.targets.base import Endpoint, Target
from pgknee.targets.local import EmbeddedCluster, find_bindir, server_user
from pgknee.targets.remote import RemoteTarget
from pgknee.types import ProgressPoint, StepMeasurement
from pgknee.workloads import Script, Workload, get_workload
from pgknee.workloads.base import ScriptSource, write_scripts

SERVER_SETTINGS = ("max_connections", "superuser_reserved_connections", "shared_buffers", "work_mem",
                   "effective_cache_size", "synchronous_commit", "fsync", "full_page_writes", "wal_level",
                   "wal_buffers", "max_wal_size", "checkpoint_timeout", "commit_delay", "huge_pages",
                   "track_io_timing", "compute_query_id", "shared_preload_libraries", "jit")


class UI(Protocol):
    """What the runner tells the person watching. Implemented by the CLI."""

    def say(self, text: str) -> None: ...
    def step_started(self, seq: int, total: int, variant: str, clients: int, rep: int, seconds: float) -> None: ...
    def step_progress(self, point: ProgressPoint) -> None: ...
    def step_finished(self, text: str) -> None: ...


@dataclass(frozen=True)
class StepSpec:
    seq: int
    variant: Variant
    clients: int
    rep: int


def schedule(plan: Plan) -> list[StepSpec]:
    """Client counts in the order given; repetitions; variants interleaved inside
    each (clients, rep) so that machine drift does not look like a difference."""
    out: list[StepSpec] = []
    for clients in plan.clients:
        for rep in range(1, plan.reps + 1):
            for v in plan.variants:
                out.append(StepSpec(len(out) + 1, v, clients, rep))
    return out


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)


class _StatsReader:
    """pg_stat_database reads on pgknee's own connection; each read is a commit in
    the benchmark database, counted so it can be taken out of the check."""

    def __init__(self, conn: psycopg.Connection[Any], settle_s: float) -> None:
        self.conn = conn
        self.reads = 0
        self.settle_s = settle_s

    def reconnect(self, conn: psycopg.Connection[Any]) -> None:
        with contextlib.suppress(psycopg.Error):
            self.conn.close()
        self.conn = conn

    def snapshot(self) -> dict[str, float]:
        self.reads += 1
        return pgstats.snapshot(self.conn)

    def settled(self) -> dict[str, float]:
        deadline = time.monotonic() + self.settle_s
        prev = self.snapshot()
        while time.monotonic() < deadline:
            time.sleep(0.25)
            cur = self.snapshot()
            if cur.get("xact_commit", 0) - prev.get("xact_commit", 0) <= 1 and \
                    cur.get("active_time") == prev.get("active_time"):
                return cur
            prev = cur
        return prev


class Runner:
    def __init__(self, plan: Plan, store: Store | None, ui: UI, *, argv: list[str] | None = None,
                 extend: tuple[str, dict[str, Any]] | None = None) -> None:
        self.plan = plan
        self._store = store
        self.ui = ui
        self.argv = argv or []
        self.run_id = new_run_id()
        self.cpu_count = os.cpu_count() or 1
        self.steps = schedule(plan)
        self.kept_message: str | None = None
        self.store_later: list[tuple[int | None, str, list[str]]] = []  # commands run before the run row exists
        self.extra_env: dict[str, str] = {}  # e.g. the plan file's text
        self.poolers: Poolers | None = Poolers(plan, ui.say) if plan.pooled() else None
        self.run_as: proc.RunAs | None = None  # who runs the processes pgknee serves (pgbouncer) when root
        self.settings_facts: dict[str, float] = {}  # what the server reported after the last restart
        # pgknee run --extend: (the stored run's id, its plan with the new counts added)
        self.extend = extend
        if extend is not None:
            self.run_id = extend[0]

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("this runner has no store (dry run)")
        return self._store

    def preflight(self) -> None:
        """Everything that can be refused without a server, before anything is created: the
        pgbench binary, the scripts (parsed by pgbench), the pooler and its version."""
        pgbench = find_pgbench(self.plan.pgbench)
        _, version_num = pgbench_version(pgbench)
        workload = get_workload(self.plan.workload)
        self._preflight_scripts(pgbench, version_num, workload)
        self._preflight_poolers(workload)

    # ---- what would run ---------------------------------------------------------------------
    def dry_run(self) -> list[str]:
        """The plan as pgknee would execute it: every pgbench command line (no secrets: the
        connection travels in the environment) and the estimated wall time. Starts nothing
        but pgbench's own script parser."""
        pgbench = find_pgbench(self.plan.pgbench)
        _, version_num = pgbench_version(pgbench)
        workload = get_workload(self.plan.workload)
        self._preflight_scripts(pgbench, version_num, workload)
        self._preflight_poolers(workload)
        plan = self.plan
        target = plan.target.dsn and f"--dsn {plan.to_dict()['target']['dsn']}" or "an embedded throwaway cluster"
        lines = [f"target: {target}; workload {workload.name} at scale {plan.workload.scale:g}; "
                 f"{len(self.steps)} steps; variants: " + "; ".join(f"{v.name} = {v.describe()}"
                                                                    for v in plan.variants)]
        if self.poolers is not None:
            lines += self.poolers.describe_managed(max(plan.clients), plan.duration_s + plan.warmup_s)
        with tempfile.TemporaryDirectory(prefix="pgknee-dry-") as tmp:
            scripts = {v.name: [s for s, _ in self._scripts_for(workload, v, Path(tmp), None)]
                       for v in plan.variants}
            for spec in self.steps:
                threads = plan.threads_for(spec.clients, self.cpu_count)
                run = self._pgbench_run(pgbench, version_num, spec.clients, threads, plan.duration_s, spec.variant,
                                        scripts[spec.variant.name], workload.defines(), Path("STEPDIR/log"), True)
                argv = " ".join(a.replace(tmp + "/", "") for a in run.argv())
                lines.append(f"step {spec.seq}/{len(self.steps)} c{spec.clients} rep {spec.rep} {spec.variant.name}: "
                             f"{argv}")
        setup = 10.0 + (7.0 * plan.workload.scale if workload.name == "ewallet" else 0.0)
        total = plan.estimated_seconds() + setup
        lines.append(f"estimated wall time: {int(total // 60)} min {int(total % 60)} s "
                     f"({plan.duration_s + plan.warmup_s} s per step plus about "
                     f"{plan.pre_s + plan.post_s + 2:.0f} s around it, plus setup)")
        return lines

    # ---- the whole run -----------------------------------------------------------------------
    def run(self) -> str:
        pgbench = find_pgbench(self.plan.pgbench)
        pg_version_text, pg_version_num = pgbench_version(pgbench)
        self._check_open_files(max(self.plan.clients))
        workload = get_workload(self.plan.workload)  # a missing script file is bad input: say so now
        self._preflight_scripts(pgbench, pg_version_num, workload)
        self._preflight_poolers(workload)
        created = False
        status, reason = "failed", None
        stack = contextlib.ExitStack()
        try:
            with proc.signals(proc.raising(lambda name: Interrupted(f"interrupted by {name}"))):
                target = self._open_target(stack)
                # pgknee's own (0711 when pgbench runs as another user): scripts, passfiles, step logs
                work_dir = safefs.private_dir("pgknee-run-", reachable_by=target.run_as)
                stack.callback(shutil.rmtree, work_dir, True)
                child_env = target.endpoint.child_env(work_dir, target.run_as)
                stats_conn = target.endpoint.connect("stats")
                stack.callback(stats_conn.close)
                server = self._server_info(stats_conn)
                self._check_capacity(target, server)
                self._start_poolers(target)

                def run_pgbench(args: list[str], schema: str) -> None:
                    """pgbench -i in the workload's schema: first (and only) on its search_path."""
                    self.store_later.append((None, "init", [pgbench, *args]))
                    opts = f"{child_env.get('PGOPTIONS', '')} -c search_path={schema}".strip()
                    r = proc.run([pgbench, *args], env={**child_env, "PGOPTIONS": opts}, timeout=6 * 3600,
                                 run_as=target.run_as, cwd=str(work_dir))
                    if r.returncode != 0:
                        last = [ln for ln in r.stderr.splitlines() if ln.strip()][-1:]
                        raise TargetError(f"pgbench initialisation failed: {' '.join(last)}")

                meta = workload.install(stats_conn, say=self.ui.say, run_pgbench=run_pgbench)
                scripts = {v.name: self._scripts_for(workload, v, work_dir, target.run_as)
                           for v in self.plan.variants}
                self._create_or_extend_run(workload.name, target)
                created = True
                env = self._environment(target, server, pgbench, pg_version_text, meta) | self.extra_env
                env.update({f"commits_per_txn.{name}.{s.name}": repr(commits_per_transaction(text))
                            for name, ss in scripts.items() for s, text in ss})
                env.update({f"workload.script.{s.filename}.sha256": hashlib.sha256(s.text.encode()).hexdigest()
                            for s in workload.sources()})
                env.update({f"workload.size.{k}": str(v) for k, v in workload.table_sizes(stats_conn).items()})
                self.store.set_environment(self.run_id, env)
                if self.argv:
                    self.store.add_command(self.run_id, None, "pgknee", self.argv)
                for step_id, purpose, argv in self.store_later:
                    self.store.add_command(self.run_id, step_id, purpose, argv)
                sampler = self._start_samplers(stack, target.endpoint, int(server["server_version_num"]))
                os_sampler = OsSampler(self.plan.os_interval_s)
                if self.plan.os_interval_s:
                    os_sampler.start()
                    stack.callback(os_sampler.close)
                reader = _StatsReader(stats_conn, self.plan.settle_s)
                for spec in self.steps:
                    self._run_step(spec, pgbench, pg_version_num, [s for s, _ in scripts[spec.variant.name]],
                                   workload.defines(), child_env, work_dir, sampler, os_sampler, reader, target)
                check = workload.check(reader.conn)  # its connection is renewed by a restart
                if check is not None:
                    self.store.set_environment(self.run_id, {
                        "check.money": check.summary, "check.money.ok": str(check.ok).lower(),
                        **{f"check.money.{k}": str(v) for k, v in check.details.items()}})
                    self.ui.say(("✓ " if check.ok else "✗ ") + check.summary)
                if self.plan.target.keep:
                    self.kept_message = target.keep()
                status = "completed"
        except Interrupted as e:
            status, reason = "interrupted", e.message
            raise
        except PgkneeError as e:
            reason = e.message
            raise
        except psycopg.OperationalError as e:
            reason = f"lost the connection to the server: {str(e).strip().splitlines()[0]}"
            raise TargetError(reason, "check the server log; completed steps are kept") from None
        except psycopg.Error as e:
            reason = f"the server refused: {str(e).strip().splitlines()[0]}"
            raise TargetError(reason, "check the user's privileges on the target") from None
        finally:
            with proc.signals(signal.SIG_IGN):
                try:
                    stack.close()
                finally:
                    if created:
                        self.store.db.execute("UPDATE steps SET status = ?, status_reason = ? "
                                              "WHERE run_id = ? AND status = 'running'",
                                              ("interrupted" if status == "interrupted" else "failed",
                                               reason, self.run_id))
                        self.store.finish_run(self.run_id, status, reason)
        return self.run_id

    # ---- setup ---------------------------------------------------------------------------------
    def _open_target(self, stack: contextlib.ExitStack) -> Target:
        spec = self.plan.target
        if spec.dsn is None:
            cluster = EmbeddedCluster(find_bindir(spec.pg_bindir), dict(spec.settings))
            stack.callback(cluster.close)
            self.ui.say(f"starting a throwaway PostgreSQL {'.'.join(map(str, cluster.version or ()))} "
                        f"in {cluster.root}" + (f" as user {cluster.run_as.name}" if cluster.run_as else ""))
            cluster.start()
            cluster.create_database()
            return cluster
        if spec.settings:
            raise TargetError("--set changes the embedded server only; pgknee does not change a remote "
                              "server's settings", "set them on the server, or drop --dsn")
        target = RemoteTarget(spec.dsn)
        stack.callback(target.close)
        if target.password_in_dsn and any(spec.dsn in a for a in sys.argv):  # the process list shows argv only
            self.ui.say("note: the DSN holds a password, which other users of this machine can read in the "
                        "process list; prefer PGPASSWORD or ~/.pgpass (pgknee never stores or passes it on)")
        return target

    def _server_info(self, conn: psycopg.Connection[Any]) -> dict[str, str]:
        info: dict[str, str] = {}
        # pg_settings hides what the user may not read (instead of failing like current_setting)
        rows = conn.execute("SELECT name, CASE WHEN unit IS NULL OR unit = '' THEN setting "
                            "ELSE setting || ' ' || unit END FROM pg_settings WHERE name = ANY(%s)",
                            (["server_version", "server_version_num", "reserved_connections", *SERVER_SETTINGS],))
        for name, value in rows.fetchall():
            info[name] = str(value)
        for name in ("max_connections", "superuser_reserved_connections", "server_version_num"):
            row = conn.execute("SELECT setting FROM pg_settings WHERE name = %s", (name,)).fetchone()
            if row:
                info[name] = str(row[0])
        show = conn.execute("SHOW server_version").fetchone()
        info["server_version"] = str(show[0]) if show else "?"
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        info["is_superuser"] = str(bool(row and row[0])).lower()
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").fetchone()
        info["connections_in_use"] = str(row[0] if row else 0)
        info.setdefault("reserved_connections", "0")
        return info

    def _check_capacity(self, target: Target, server: dict[str, str]) -> None:
        max_conn = int(server.get("max_connections", "100"))
        reserved = int(server.get("superuser_reserved_connections", "3"))
        if server.get("is_superuser") != "true":
            reserved += int(server.get("reserved_connections", "0"))
        in_use = int(server.get("connections_in_use", "0"))  # includes our stats connection
        ours = 1 if self.plan.sample_interval_s else 0  # the sampler, still to come
        for v in self.plan.variants:  # a variant's own max_connections (a restart) replaces the server's
            mine = int(dict(v.settings).get("max_connections", max_conn))
            free = mine - reserved - in_use - ours
            need = max(self._server_connections(c, v) for c in self.plan.clients)
            if need > free:
                what = f"variant {v.name}'s largest step" if len(self.plan.variants) > 1 else "the largest step"
                idle = f" ({v.idle} of them idle sessions)" if v.idle and v.pooler is None else ""
                hint = (f"add --set max_connections={need + reserved + in_use + ours + 10}, lower --clients or idle="
                        if target.kind == "embedded" else "raise max_connections on the server or lower --clients")
                raise TargetError(f"{what} needs {need} connections{idle} but the server has room for {free} "
                                  f"(max_connections={mine}, {reserved} reserved, {in_use} in use, "
                                  f"{ours} for pgknee's sampler)", hint)

    @staticmethod
    def _server_connections(clients: int, v: Variant) -> int:
        """Server connections a step opens: the clients, or a managed pool's size (and reserve).
        An external pooler's are its own business."""
        if v.pooler is None:
            return clients + v.idle
        if v.pooler.kind == "external":
            return 0
        return min(clients, v.pooler.pool_size + v.pooler.reserve) if v.pooler.mode != "statement" else \
            v.pooler.pool_size + v.pooler.reserve

    def _create_or_extend_run(self, workload: str, target: Target) -> None:
        if self.extend is None:
            self.store.create_run(self.run_id, workload=workload, target_kind=target.kind,
                                  target_label=target.endpoint.label, plan=self.plan.to_dict(),
                                  steps_planned=len(self.steps))
            return
        last = self.store.extend_run(self.run_id, plan=self.extend[1], more_steps=len(self.steps))
        self.steps = [dataclasses.replace(s, seq=s.seq + last) for s in self.steps]
        self.extra_env[f"extended.{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"] = (
            f"clients {','.join(map(str, self.plan.clients))} added on a new "
            + ("embedded server" if target.kind == "embedded" else f"session to {target.endpoint.label}"))

    def _start_poolers(self, target: Target) -> None:
        """Log in through every pooler once; pin a local server when placement asks."""
        if self.poolers is None:
            return
        self.run_as = target.run_as
        self.poolers.check_through(target.endpoint, self.run_as, max(self.plan.clients))
        if self.poolers.server_cpus is not None:
            pid = target.server_pid()
            if pid is not None:
                self.poolers.pinned = pin_process_tree(pid, self.poolers.server_cpus)

    def _preflight_poolers(self, workload: Workload) -> None:
        if self.poolers is None:
            return
        texts = {v.name: [(src.filename, text) for src, text in self._script_texts(workload, v)]
                 for v in self.plan.variants}
        self.poolers.check_before_start(texts, embedded=self.plan.target.dsn is None)

    def _check_open_files(self, clients: int) -> None:
        # pgbench holds a socket per client; a managed pgbouncer one per client plus its pool
        pools = [v.pooler.pool_size + v.pooler.reserve for v in self.plan.variants if v.pooler is not None]
        need = clients + 64 + (max(pools) + 64 if pools else 0) + max(v.idle for v in self.plan.variants)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < need:
            if hard == resource.RLIM_INFINITY or hard >= need:
                resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
            else:
                raise DriverError(f"{clients} clients need about {need} open files but the limit is {hard}",
                                  f"raise it with 'ulimit -n {need}' (or in limits.conf) and run again")

    def _environment(self, target: Target, server: dict[str, str], pgbench: str, pgbench_ver: str,
                     meta: dict[str, str]) -> dict[str, str]:
        mem = read_meminfo()
        env = {"pgknee.version": __version__, "host.name": platform.node(), "host.os": platform.platform(),
               "host.cpus": str(self.cpu_count), "host.mem_gb": f"{mem.get('MemTotal', 0) / 2**20:.1f}",
               "host.python": platform.python_version(), "pgbench.path": pgbench, "pgbench.version": pgbench_ver,
               "server.version": server.get("server_version", "?"),
               "server.version_num": server.get("server_version_num", "0"),
               "server.is_superuser": server.get("is_superuser", "false")}
        env.update({f"setting.{k}": v for k, v in server.items() if k in SERVER_SETTINGS})
        env.update(target.describe())
        env.update({f"workload.{k}": v for k, v in meta.items()})
        if self.poolers is not None:
            env.update(self.poolers.environment())
        return env

    def _start_samplers(self, stack: contextlib.ExitStack, endpoint: Endpoint,
                        version_num: int) -> ActivitySampler | None:
        if not self.plan.sample_interval_s:
            return None
        sampler = ActivitySampler(endpoint, version_num, self.plan.sample_interval_s,
                                  all_databases=self.plan.sample_all_databases, query_text=self.plan.query_text)
        sampler.start()
        stack.callback(sampler.close)
        return sampler

    def _preflight_scripts(self, pgbench: str, version_num: int, workload: Workload) -> None:
        """pgbench parses every script (in every variant's form) before it connects: point it at a
        server that cannot exist and keep what it says about the scripts, with file and line. It
        runs as the user it will run as for the sweep."""
        run_as = server_user()
        tmp = safefs.private_dir("pgknee-preflight-", reachable_by=run_as)
        try:
            for i, v in enumerate(self.plan.variants):
                d = safefs.make_dir(tmp / f"v{i}", owner=None, mode=0o711 if run_as else 0o700)
                scripts = [s for s, _ in self._scripts_for(workload, v, d, run_as)]
                run = self._pgbench_run(pgbench, version_num, 1, 1, 1, v, scripts, workload.defines(), None, False)
                argv = [a for a in run.argv() if not a.startswith("--time=")] + ["--transactions=1"]
                env = {**proc.base_env(), "PGHOST": str(tmp / "no-server"), "PGPORT": "1",
                       "PGCONNECT_TIMEOUT": "1", "PGPASSFILE": str(tmp / "no-passfile")}
                r = proc.run(argv, env=env, timeout=30, run_as=run_as, cwd=str(tmp))
                for line in r.stderr.splitlines():
                    if line.startswith("pgbench: error:") and "connection" not in line and "connect" not in line:
                        msg = line.removeprefix("pgbench: error:").strip()
                        for s in scripts:  # show the user's file name, not pgknee's copy
                            msg = msg.replace(str(s.path), s.path.name)
                        raise UserError(f"script error: {msg}" + (f" (in the {v.name} variant)"
                                                                  if len(self.plan.variants) > 1 else ""),
                                        "fix the script; pgbench's script syntax: \\set, \\sleep, SQL ending in ;")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @staticmethod
    def _script_texts(workload: Workload, variant: Variant) -> list[tuple[ScriptSource, str]]:
        """The workload's scripts as this variant runs them (in pipeline form, with think time)."""
        out = []
        for src in workload.sources():
            text = src.text
            if variant.pipeline:
                text = pipeline_form(text, src.filename)
            if variant.think_ms:
                text = with_think_time(text, round(variant.think_ms * 1000))
            out.append((src, text))
        return out

    def _scripts_for(self, workload: Workload, variant: Variant, work_dir: Path,
                     run_as: proc.RunAs | None) -> list[tuple[Script, str]]:
        """The variant's scripts written for pgbench (read by `run_as`): one directory each, so
        the file keeps its own name in pgbench's messages."""
        texts = self._script_texts(workload, variant)
        return list(zip(write_scripts(texts, work_dir, run_as), (t for _, t in texts), strict=True))

    # ---- one step ------------------------------------------------------------------------------
    def _pgbench_run(self, pgbench: str, version_num: int, clients: int, threads: int, seconds: int,
                     variant: Variant, scripts: list[Script], defines: dict[str, str], log_prefix: Path | None,
                     progress: bool) -> PgbenchRun:
        return PgbenchRun(pgbench=pgbench, clients=clients, threads=threads, duration_s=seconds,
                          protocol=variant.protocol, scripts=tuple(scripts), defines=tuple(sorted(defines.items())),
                          log_prefix=log_prefix, max_tries=self.plan.max_tries, version_num=version_num,
                          progress_s=1 if progress else 0, log_sampling_rate=self.plan.log_sampling_rate,
                          connect_per_txn=variant.connect_per_txn, rate=variant.rate)

    def _run_step(self, spec: StepSpec, pgbench: str, version_num: int, scripts: list[Script],
                  defines: dict[str, str], child_env: dict[str, str], work_dir: Path,
                  sampler: ActivitySampler | None, os_sampler: OsSampler, reader: _StatsReader,
                  target: Target) -> None:
        plan = self.plan
        v = spec.variant
        self._apply_settings(v, target, sampler, reader)
        threads = plan.threads_for(spec.clients, self.cpu_count)
        pooler_cols = (v.pooler.kind, v.pooler.mode if v.pooler.kind == "managed" else None,
                       v.pooler.pool_size if v.pooler.kind == "managed" else None) if v.pooler else None
        step_id = self.store.begin_step(self.run_id, seq=spec.seq, variant=v.name,
                                        clients=spec.clients, rep=spec.rep, threads=threads,
                                        protocol=v.protocol, duration_s=plan.duration_s,
                                        warmup_s=plan.warmup_s, pipeline=v.pipeline,
                                        connect_per_txn=v.connect_per_txn, rate=v.rate,
                                        think_ms=v.think_ms, pooler=pooler_cols, idle=v.idle, idle_kind=v.idle_kind,
                                        settings=dict(v.settings) or None)
        self.ui.step_started(self.steps.index(spec) + 1, len(self.steps), v.name, spec.clients, spec.rep,
                             plan.duration_s + plan.warmup_s)
        # pgbench's own (it writes its logs there): pgknee reads them with safefs.open_child_file
        step_dir = safefs.make_dir(work_dir / f"step-{spec.seq}", owner=target.run_as)
        run = self._pgbench_run(pgbench, version_num, spec.clients, threads, plan.duration_s,
                                v, scripts, defines, step_dir / "log", True)
        self.store.add_command(self.run_id, step_id, "bench", run.argv())
        with contextlib.ExitStack() as step_stack:
            pooled = self._enter_pooler(step_stack, spec, step_id, target, os_sampler)
            if pooled is not None:
                child_env = pooled.endpoint.child_env(work_dir, target.run_as)
            server_pid = target.server_pid()
            facts: dict[str, float] = dict(self.settings_facts)
            holder = self._enter_idle(step_stack, spec, step_id, target, pooled, server_pid, facts)
            if sampler:
                sampler.begin_step(step_id)
            os_sampler.begin_step()
            time.sleep(plan.pre_s)
            if plan.warmup_s:
                self._set_phase(sampler, os_sampler, "warmup", pooled)
                warm = self._pgbench_run(pgbench, version_num, spec.clients, threads, plan.warmup_s,
                                         v, scripts, defines, None, False)
                self.store.add_command(self.run_id, step_id, "warmup", warm.argv())
                self._execute(warm, child_env, None, os_sampler, target, step_dir)
            q0 = sampler.queries_run if sampler else 0
            r0 = reader.reads
            before = reader.snapshot()
            pool_before = self._pooler_totals(pooled)
            self._set_phase(sampler, os_sampler, "bench", pooled)
            bench_start = time.time()
            rc, out, err, points = self._execute(run, child_env, self.ui, os_sampler, target, step_dir)
            bench_end = time.time()
            self._set_phase(sampler, os_sampler, "post", pooled)
            pool_after = self._pooler_totals(pooled)
            pooler_died = pooled is not None and not pooled.alive()
            facts.update(memory_picture(server_pid, holder.backend_pids if holder and pooled is None else (),
                                        prefix="end."))
            idle_alive = holder.alive() if holder is not None else 0
            if holder is not None:
                facts["idle.open_at_end"] = float(idle_alive)
            pool_rows, pool_tail = [], ""
            if pooled is not None:
                pool_rows = pooled.sampler.close() if pooled.sampler is not None else []
                pool_tail = pooled.log_tail()
                # the pool's server connections would sit idle and flush their statistics only
                # after up to 10 s: close them so pg_stat_database counts the step now
                pooled.release()
            after = reader.settled()
            own = (sampler.queries_run - q0 if sampler else 0) + (reader.reads - r0)
            rest = plan.post_s - (time.time() - bench_end)
            if rest > 0:
                time.sleep(rest)
            samples = sampler.end_step() if sampler else None
            os_rows = os_sampler.end_step()
        summary = parse_summary(out)
        logs = log_files(step_dir / "log")
        try:
            log = read_transaction_logs(logs, has_lag=bool(v.rate),
                                        has_retries=version_num >= 150000 and plan.max_tries != 1,
                                        opener=lambda p: os.fdopen(safefs.open_child_file(p, target.run_as), "rb")
                                        ) if logs else None
        except OSError as e:  # a log that is a link, or not pgbench's: not read
            log, err = None, f"{err}\npgbench's log could not be read safely: {e}"
        duration = measured_window(summary, plan.duration_s)
        m = (measure(log, scripts, max(duration, 1e-3), think_us=round(v.think_ms * 1000))
             if log is not None else None)
        delta = pgstats.delta(before, after)
        tps_db = (delta["xact_commit"] - own) / duration if "xact_commit" in delta and duration > 0 else None
        status, reason = self._judge(rc, err, m, target)
        if status == "completed" and m is not None and m.transactions == 0 and duration <= 0.5:
            status, reason = "failed", (f"pgbench spent the whole {summary.duration_s or plan.duration_s:.0f} s "
                                        f"step opening its {spec.clients} connections "
                                        f"({(summary.conn_time_ms or 0) / 1000:.1f} s); lengthen --duration")
        if status == "completed" and holder is not None and idle_alive < v.idle:
            status, reason = "failed", (f"the server ended {v.idle - idle_alive} of the {v.idle} idle sessions "
                                        "during the step")
        if status == "failed" and pooler_died:
            reason = f"pgbouncer died during the step: {pool_tail or 'no message in its log'}; {reason}"
        pool_facts = self._pooler_facts(pooled, pool_before, pool_after)
        with self.store.transaction():
            self._write_step(step_id, status, reason, rc, bench_start, bench_end, m, summary, tps_db, delta,
                             points, samples, os_rows)
            self.store.insert_many("step_facts", ("step_id", "name", "value"),
                                   [(step_id, k, x) for k, x in facts.items()])
            if pooled is not None:
                self.store.insert_many("pooler_samples", ("run_id", "step_id", *SAMPLE_COLUMNS),
                                       [(self.run_id, step_id, *r) for r in pool_rows])
                self.store.insert_many("step_pooler", ("step_id", "name", "value"),
                                       [(step_id, k, x) for k, x in pool_facts.items()])
        shutil.rmtree(step_dir, ignore_errors=True)
        if status == "completed" and m is not None and m.latency is not None:
            self.ui.step_finished(
                f"c{spec.clients} rep {spec.rep}{'' if len(plan.variants) == 1 else ' ' + v.name}: "
                f"{m.tps:,.1f} tps, latency {m.latency.mean_ms:.2f} ms (p99 {m.latency.p99_ms:.2f}), "
                f"{m.failed} failed")
        else:
            reason = reason or "no transaction completed in the step"
            self.ui.step_finished(f"c{spec.clients} rep {spec.rep}: FAILED: {reason}")
            if rc == 1 or (m is None or m.transactions == 0):
                raise DriverError(f"pgbench failed at {spec.clients} clients: {reason}",
                                  "see the message above; completed steps are kept in the store")

    def _enter_pooler(self, stack: contextlib.ExitStack, spec: StepSpec, step_id: int, target: Target,
                      os_sampler: OsSampler) -> StepPooler | None:
        """The step's pooler, if its variant has one, stopped when `stack` closes."""
        v = spec.variant
        if v.pooler is None:
            return None
        assert self.poolers is not None
        try:
            pooled = stack.enter_context(self.poolers.step(
                v, target.endpoint, self.run_as, spec.clients, self.plan.duration_s + self.plan.warmup_s))
        except PgkneeError as e:
            self.store.end_step(step_id, "failed", e.message)
            self.ui.step_finished(f"c{spec.clients} rep {spec.rep} {v.name}: FAILED: {e.message}")
            raise
        os_sampler.pooler_pid = pooled.pid
        stack.callback(setattr, os_sampler, "pooler_pid", None)
        return pooled

    def _enter_idle(self, stack: contextlib.ExitStack, spec: StepSpec, step_id: int, target: Target,
                    pooled: StepPooler | None, server_pid: int | None, facts: dict[str, float]) -> IdleHolder | None:
        """The step's idle sessions, if its variant has any, closed when `stack` closes."""
        v = spec.variant
        if not v.idle:
            return None
        facts.update(memory_picture(server_pid, prefix="before_idle."))
        holder = self._open_idle(v, target, pooled, step_id, spec)
        stack.callback(holder.close)
        facts.update({"idle.opened": float(len(holder.conns)), "idle.open_s": holder.open_seconds})
        if v.idle_kind == "catalog":
            # their catalogue queries report to pg_stat_database once they have idled up to 10 s:
            # let that happen before the measured window
            time.sleep(self.plan.idle_flush_s)
        return holder

    def _open_idle(self, v: Variant, target: Target, pooled: StepPooler | None, step_id: int,
                   spec: StepSpec) -> IdleHolder:
        """The variant's idle sessions: through the pooler when there is one (as article 004 did),
        else to the server (the embedded one by its trusted socket: no SCRAM per session)."""
        endpoint = pooled.endpoint if pooled is not None else target.session_endpoint
        plan = self.plan
        hold_s = plan.duration_s + plan.warmup_s + plan.pre_s + plan.post_s + plan.idle_flush_s + 60
        holder = IdleHolder(endpoint, v.idle, v.idle_kind, sleep_s=hold_s,
                            timeout_s=max(120.0, v.idle * (1.0 if v.idle_kind == "catalog" else 0.1)))
        self.ui.say(f"opening {v.idle} idle sessions ({v.idle_kind})")
        try:
            holder.open()
        except PgkneeError as e:
            self.store.end_step(step_id, "failed", e.message)
            self.ui.step_finished(f"c{spec.clients} rep {spec.rep} {v.name}: FAILED: {e.message}")
            raise
        return holder

    def _apply_settings(self, v: Variant, target: Target, sampler: ActivitySampler | None,
                        reader: _StatsReader) -> None:
        """Restart the server when this step's variant wants other settings than it runs with;
        reconnect pgknee's own sessions."""
        want = dict(v.settings)
        if not target.apply_settings(want, say=self.ui.say):
            return
        reader.reconnect(target.endpoint.connect("stats"))
        if sampler is not None:
            sampler.reconnect()
        self.settings_facts = {}
        for name in want:
            row = reader.conn.execute("SELECT setting FROM pg_settings WHERE name = %s", (name,)).fetchone()
            with contextlib.suppress(TypeError, ValueError):
                self.settings_facts[f"setting.{name}"] = float(row[0]) if row is not None else math.nan
        reader.reads += len(want)

    @staticmethod
    def _pooler_totals(pooled: StepPooler | None) -> dict[str, float] | None:
        if pooled is None or pooled.sampler is None or not pooled.alive():
            return None
        try:
            return pooled.sampler.totals()
        except (PgkneeError, psycopg.Error):
            return None

    @staticmethod
    def _pooler_facts(pooled: StepPooler | None, before: dict[str, float] | None,
                      after: dict[str, float] | None) -> dict[str, str]:
        if pooled is None:
            return {}
        facts = dict(pooled.facts)
        if before is not None and after is not None:
            facts.update({f"delta.{k}": repr(after[k] - before.get(k, 0.0)) for k in after})
        elif pooled.sampler is None:
            facts["missing"] = "no admin console (give --pooler-admin-dsn)"
        else:
            facts["missing"] = "the console did not answer at the end of the step"
        if pooled.sampler is not None and pooled.sampler.errors:
            facts["sampler_errors"] = " | ".join(pooled.sampler.errors)
        return facts

    @staticmethod
    def _set_phase(sampler: ActivitySampler | None, os_sampler: OsSampler, phase: str,
                   pooled: StepPooler | None = None) -> None:
        if sampler:
            sampler.phase = phase
        os_sampler.phase = phase
        if pooled is not None and pooled.sampler is not None:
            pooled.sampler.phase = phase

    def _judge(self, rc: int, err: str, m: StepMeasurement | None, target: Target) -> tuple[str, str | None]:
        if rc == 0 and m is not None:
            return "completed", None
        lines = [ln.strip() for ln in err.splitlines()
                 if ln.strip() and ("error" in ln or "FATAL" in ln or "could not" in ln or "aborted" in ln)]
        # "Run was aborted; the above results are incomplete" says only that something went wrong:
        # the line naming the cause (a client aborted in a command, with the server's ERROR) comes first
        causes = [ln for ln in lines if "aborted in command" in ln or "ERROR:" in ln or "FATAL:" in ln]
        why = (causes[0] if causes else lines[-1] if lines
               else err.strip().splitlines()[-1] if err.strip() else f"exit code {rc}")
        if not target.alive():
            why = "the embedded server died: " + why
        return "failed", f"pgbench exit {rc}: {why}"

    def _execute(self, run: PgbenchRun, env: dict[str, str], ui: UI | None, os_sampler: OsSampler,
                 target: Target, cwd: Path) -> tuple[int, str, str, list[ProgressPoint]]:
        """Run pgbench bounded in time (as the target's unprivileged user when pgknee is root);
        progress lines go to the UI as they come."""
        p = proc.spawn(run.argv(), env=env, cpus=self.poolers.client_cpus if self.poolers else None,
                       run_as=target.run_as, cwd=str(cwd))
        os_sampler.client_pid = p.pid
        points: list[ProgressPoint] = []
        err_lines: list[str] = []
        out_chunks: list[bytes] = []

        def pump_err() -> None:
            assert p.stderr is not None
            for raw in p.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                pt = parse_progress_line(line)
                if pt is not None:
                    points.append(pt)
                    if ui is not None:
                        ui.step_progress(pt)
                else:
                    err_lines.append(line)

        def pump_out() -> None:
            assert p.stdout is not None
            out_chunks.append(p.stdout.read())

        threads = [threading.Thread(target=pump_err, daemon=True), threading.Thread(target=pump_out, daemon=True)]
        for t in threads:
            t.start()
        limit = run.duration_s + 60 + run.clients * 0.05
        try:
            with proc.guarded(p, first=signal.SIGINT):
                try:
                    p.wait(timeout=limit)
                except subprocess.TimeoutExpired:
                    err_lines.append(f"pgbench did not finish within {limit:.0f} s and was stopped")
        finally:
            os_sampler.client_pid = None
            for t in threads:
                t.join(timeout=5)
        rc = p.returncode if p.returncode is not None else -1
        return rc, b"".join(out_chunks).decode(errors="replace"), "\n".join(err_lines), points

    def _write_step(self, step_id: int, status: str, reason: str | None, rc: int, bench_start: float,
                    bench_end: float, m: StepMeasurement | None, summary: Any, tps_db: float | None,
                    delta: dict[str, float], points: list[ProgressPoint], samples: Any,
                    os_rows: list[tuple[Any, ...]]) -> None:
        values: dict[str, Any] = {"bench_start": bench_start, "bench_end": bench_end, "pgbench_exit": rc,
                                  "tps_pgbench": summary.tps, "lat_avg_pgbench_ms": summary.lat_avg_ms,
                                  "conn_time_ms": summary.conn_time_ms, "tps_db": tps_db}
        if m is not None:
            values.update(transactions=m.transactions, failed=m.failed, retried=m.retried, retries=m.retries,
                          tps=m.tps)
            if m.lag is not None:
                values.update(lag_avg_ms=m.lag.mean_ms, lag_p99_ms=m.lag.p99_ms, lag_max_ms=m.lag.max_ms)
            if m.latency is not None:
                lat = m.latency
                values.update(lat_avg_ms=lat.mean_ms, lat_stddev_ms=lat.stddev_ms, lat_min_ms=lat.min_ms,
                              lat_p50_ms=lat.p50_ms, lat_p95_ms=lat.p95_ms, lat_p99_ms=lat.p99_ms,
                              lat_max_ms=lat.max_ms)
            self.store.insert_many(
                "step_scripts", ("step_id", "script_no", "script", "weight", "transactions", "failed", "retried",
                                 "tps", "lat_avg_ms", "lat_stddev_ms", "lat_p50_ms", "lat_p95_ms", "lat_p99_ms",
                                 "lat_max_ms"),
                [(step_id, s.script_no, s.name, s.weight, s.transactions, s.failed, s.retried, s.tps,
                  *((s.latency.mean_ms, s.latency.stddev_ms, s.latency.p50_ms, s.latency.p95_ms, s.latency.p99_ms,
                     s.latency.max_ms) if s.latency else (None,) * 6)) for s in m.scripts])
            self.store.insert_many("step_failures", ("step_id", "kind", "count"),
                                   [(step_id, k, v) for k, v in m.failures.items()])
        self.store.end_step(step_id, status, reason, **values)
        self.store.insert_many("step_pg_stat_database", ("step_id", "name", "delta"),
                               [(step_id, k, v) for k, v in delta.items()])
        seen: set[float] = set()
        self.store.insert_many("step_progress", ("step_id", "t_s", "tps", "lat_ms", "stddev_ms", "failed"),
                               [(step_id, p.t_s, p.tps, p.lat_ms, p.stddev_ms, p.failed) for p in points
                                if not (p.t_s in seen or seen.add(p.t_s))])  # type: ignore[func-returns-value]
        if samples is not None:
            self.store.insert_many(
                "snapshots", ("run_id", "step_id", "_collected_at", "_phase", "epoch", "backends", "client_backends",
                              "active", "idle_in_xact", "query_ms"),
                [(self.run_id, step_id, *s) for s in samples.snapshots])
            self.store.insert_many(
                "snap_pg_stat_activity", ("_run_id", "_step_id", "_collected_at", "_phase", *ACTIVITY_COLUMNS),
                [(self.run_id, step_id, *r) for r in samples.rows])
        self.store.insert_many("os_samples", ("run_id", "step_id", *OS_COLUMNS),
                               [(self.run_id, step_id, *r) for r in os_rows])
