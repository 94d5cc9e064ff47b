"""What lives for the whole run: the target, pgknee's private directory, the child environment,
pgknee's own sessions (statistics, the samplers), the scripts, the store writer. Opened in order
on an ExitStack, so whatever was started is stopped however the run ends."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from pgknee.base.errors import TargetError
from pgknee.collect.activity import ActivitySampler
from pgknee.collect.kcache import KcacheCollector
from pgknee.collect.osproc import OsSampler
from pgknee.collect.pgstats import StatsReader
from pgknee.collect.protocol import Collectors
from pgknee.collect.serverfacts import ServerFacts, read_server
from pgknee.collect.serveros import ServerOsSampler
from pgknee.collect.serverstats import server_collectors
from pgknee.collect.waitsampling import WaitProfiler
from pgknee.driver.pgbench import check_conninfo
from pgknee.model import keys
from pgknee.model.facts import Settings
from pgknee.model.results import Reopening
from pgknee.plan import Plan
from pgknee.pooler.lab import Poolers, pin_process_tree
from pgknee.run.distributed import AgentPlan, Fleet
from pgknee.run.environment import run_environment
from pgknee.run.machine import open_machine
from pgknee.run.preflight import Prepared, check_capacity
from pgknee.run.replay import statement_mix
from pgknee.run.schedule import StepSpec
from pgknee.run.scripts import scripts_for
from pgknee.run.ui import UI
from pgknee.store.db import Store
from pgknee.store.writer import RunWriter
from pgknee.system import proc, registry, safefs
from pgknee.targets import Target, open_target
from pgknee.workloads import Script
from pgknee.workloads.captured.mix import StatementMix


@dataclass
class RunSession:
    plan: Plan
    ui: UI
    prepared: Prepared
    target: Target
    writer: RunWriter
    work_dir: Path
    child_env: dict[str, str]
    reader: StatsReader  # pgknee's statistics session, which the server's counters are read on
    # every step's (collect.protocol): a replay's statement mix, the server's counters, then the
    # samplers of pg_stat_activity, this machine's and the server's OS and pg_wait_sampling's profile
    collectors: Collectors
    scripts: dict[str, list[Script]]
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)
    settings: Settings | None = None  # the variant's settings as the server took them (read after its restart)
    tps_seen: dict[str, float] = field(default_factory=dict)  # a variant's last completed step's TPS
    fleet: Fleet | None = None  # the agents that run the steps' pgbench (run/distributed.py), if any

    @property
    def poolers(self) -> Poolers:
        return self.prepared.poolers


@dataclass(frozen=True)
class RunRecordPlan:
    """How the run's row is made: a new run, or a stored one reopened (--extend, --resume)."""

    run_id: str
    argv: list[str]
    extra_env: dict[str, str]
    reopening: Reopening | None = None
    resume: bool = False  # the stored plan's own steps that did not complete (planned already)


def open_session(stack: contextlib.ExitStack, plan: Plan, ui: UI, prepared: Prepared, writer: RunWriter,
                 record: RunRecordPlan, steps: list[StepSpec],
                 agents: AgentPlan | None = None) -> tuple[RunSession, list[StepSpec]]:
    """Start and check everything the steps need (the agents first: one missing is told before
    anything else starts); returns the session and the steps (numbered after the stored ones)."""
    fleet = _fleet(stack, writer, record.run_id, agents, ui) if agents is not None else None
    target = open_target(plan.target, ui.say)
    stack.callback(target.close)
    # pgknee's own (0711 when pgbench runs as another user): scripts, passfiles, step logs
    work_dir = safefs.private_dir("pgknee-run-", reachable_by=target.run_as)
    stack.callback(safefs.remove_private_dir, work_dir)
    child_env = target.endpoint.child_env(work_dir, target.run_as)
    check_conninfo(prepared.pgbench.path, child_env, target.run_as, str(work_dir))  # its libpq takes every keyword
    stats_conn = target.endpoint.connect("stats")
    stack.callback(stats_conn.close)
    collectors, waits = _collectors(stack, stats_conn, plan, target, ui.say)
    server = read_server(stats_conn)
    check_capacity(plan, target, server)
    _start_poolers(plan, prepared.poolers, target, ui)
    commands: list[tuple[str, list[str]]] = []
    meta = _install(plan, prepared, target, stats_conn, child_env, work_dir, commands, ui)
    texts = {v.name: scripts_for(prepared.workload, v, work_dir, target.run_as) for v in plan.variants}
    steps = _record_run(plan, writer, record, target, prepared, steps)
    if writer.store.path is not None:  # a file store: marked abandoned if pgknee dies (a PostgreSQL
        registry.current().run(writer.store.path, record.run_id)  # one's run shows its owner is gone)
    env = run_environment(plan, target, server, prepared.pgbench, prepared.workload, meta, prepared.poolers,
                          {name: [(s.name, text) for s, text in pairs] for name, pairs in texts.items()})
    env.update({keys.workload_size(k): str(v) for k, v in prepared.workload.table_sizes(stats_conn).items()})
    server_os, machine_env = open_machine(stack, plan, target, stats_conn)
    env.update(machine_env)
    stats_conn.close()  # the statistics reader takes its place (the capacity check counted one)
    reader = StatsReader(lambda: target.endpoint.connect("stats"))
    stack.callback(lambda: reader.conn.close())
    _server_collectors(collectors, reader, server, plan.settle_s,
                       statement_mix(prepared.workload, target, writer, ui.say), ui.say)
    env[keys.Env.WAIT_SAMPLING] = waits.note if collectors.notes[waits.name] == "on" else collectors.notes[waits.name]
    _samplers(collectors, plan, target, server, writer, ui.say, server_os)
    stack.callback(collectors.close)  # each stopped, the last first, before what they read from goes
    # written once every collector is added: each left out says why in the run's environment
    env.update({keys.collector(name): note for name, note in collectors.notes.items()} | _kcache_version(collectors))
    writer.set_environment({**env, **record.extra_env, **_extension_note(plan, record, target),
                            **({keys.Env.AGENTS: ",".join(fleet.names)} if fleet is not None else {})})
    for purpose, argv in ([("pgknee", record.argv)] if record.argv else []) + commands:
        writer.add_command(None, purpose, argv)  # the run's own command line first, then the set-up's
    return RunSession(plan, ui, prepared, target, writer, work_dir, child_env, reader, collectors,
                      {name: [s for s, _ in pairs] for name, pairs in texts.items()}, fleet=fleet), steps


def _collectors(stack: contextlib.ExitStack, conn: psycopg.Connection[Any], plan: Plan, target: Target,
                say: Callable[[str], None]) -> tuple[Collectors, WaitProfiler]:
    """The run's collectors, first the waits' profile: its sessions open as it is taken, before
    the server's connections are counted (check_capacity). Stopped when `stack` closes should the
    session not open (and again, the others with them, once it has)."""
    collectors = Collectors(conn.info.server_version)
    stack.callback(collectors.close)
    waits = WaitProfiler.find(target.endpoint, create=target.created_by_pgknee, say=say)
    if plan.sample_interval_s:
        collectors.add(waits)
    else:
        collectors.leave_out(waits.name, "no pg_stat_activity sampling (--sample-interval 0)")
    return collectors, waits


def _server_collectors(collectors: Collectors, reader: StatsReader, server: ServerFacts, settle_s: float,
                       mix: StatementMix | None, say: Callable[[str], None]) -> None:
    """A captured workload's statement mix, then the server's counters this server and role can
    serve (each tried once on the statistics session; which are on and why the others are not
    goes to the run's environment once the samplers are added too)."""
    if mix is not None and not collectors.add(mix):
        say(f"the replay's statement mix is not measured: {collectors.notes[mix.name].removeprefix('off: ')}; "
            "load pg_stat_statements there to compare with the capture")
    for c in server_collectors(reader, server.version_num, settle_s):
        collectors.add(c)


def _kcache_version(collectors: Collectors) -> dict[str, str]:
    """pg_stat_kcache's version when its collector is on (found once, by the collector)."""
    kc = next((c for c in collectors.all if isinstance(c, KcacheCollector)), None)
    return {keys.Env.SERVER_KCACHE: kc.version} if kc is not None and kc.version else {}


def _fleet(stack: contextlib.ExitStack, writer: RunWriter, run_id: str, agents: AgentPlan, ui: UI) -> Fleet:
    fleet = Fleet(writer.store.location, run_id, agents, ui.say)
    stack.callback(fleet.close)  # released however the run ends: each agent exits
    fleet.gather()
    return fleet


def _start_poolers(plan: Plan, poolers: Poolers, target: Target, ui: UI) -> None:
    """Log in through every pooler once (none without pooled variants); pin a local server when
    placement asks."""
    poolers.check_through(target.endpoint, target.run_as, max(plan.clients), ui.say)
    pid = target.server_pid() if poolers.server_cpus is not None else None
    if pid is not None and poolers.server_cpus is not None:
        poolers.pinned = pin_process_tree(pid, poolers.server_cpus)


def _install(plan: Plan, prepared: Prepared, target: Target, conn: psycopg.Connection[Any], child_env: dict[str, str],
             work_dir: Path, commands: list[tuple[str, list[str]]], ui: UI) -> dict[str, str]:
    """The workload in its schema; pgbench -i (when the workload asks) as pgbench's user, with
    the schema first (and only) on its search_path."""
    pgbench = prepared.pgbench.path

    def run_pgbench(args: list[str], schema: str) -> None:
        commands.append(("init", [pgbench, *args]))
        opts = f"{child_env.get('PGOPTIONS', '')} -c search_path={schema}".strip()
        r = proc.run([pgbench, *args], env={**child_env, "PGOPTIONS": opts}, timeout=6 * 3600,
                     run_as=target.run_as, cwd=str(work_dir))
        if r.returncode != 0:
            last = [ln for ln in r.stderr.splitlines() if ln.strip()][-1:]
            raise TargetError(f"pgbench initialisation failed: {' '.join(last)}")

    return prepared.workload.install(conn, say=ui.say, run_pgbench=run_pgbench)


def _record_run(plan: Plan, writer: RunWriter, record: RunRecordPlan, target: Target, prepared: Prepared,
                steps: list[StepSpec]) -> list[StepSpec]:
    if record.reopening is None:
        writer.create_run(workload=prepared.workload.name, target_kind=target.kind,
                          target_label=target.endpoint.label, plan=plan.to_dict(), steps_planned=len(steps))
        return steps
    last = writer.extend_run(record.reopening, more_steps=0 if record.resume else len(steps))
    return [dataclasses.replace(s, seq=last + i) for i, s in enumerate(steps, 1)]


def _extension_note(plan: Plan, record: RunRecordPlan, target: Target) -> dict[str, str]:
    if record.reopening is None:
        return {}
    where = "embedded server" if target.created_by_pgknee else f"session to {target.endpoint.label}"
    what = "the steps that had not completed resumed" if record.resume else \
        f"clients {','.join(map(str, plan.clients))} added"
    return {keys.extended_at(time.strftime("%Y%m%d-%H%M%S", time.gmtime())): f"{what} on a new {where}"}


def _activity_sink(writer: RunWriter) -> Callable[[int, list[Any], list[Any]], None]:
    """Samples written while a step runs, from the sampler's thread, on a store connection of that
    thread's own (SQLite connections stay with their thread; the store is in WAL mode)."""
    mine: list[RunWriter] = []

    def sink(step_id: int, snapshots: list[Any], rows: list[Any]) -> None:
        if not mine:
            mine.append(RunWriter(Store(writer.store.location), writer.run_id))
        mine[0].write_activity(step_id, snapshots, rows)

    return sink  # its connection closes with the sampler (a connection is closed by the thread that made it)


def _samplers(collectors: Collectors, plan: Plan, target: Target, server: ServerFacts, writer: RunWriter,
              say: Callable[[str], None], server_os: ServerOsSampler | None) -> None:
    """The samplers of every step, each started as it is taken (collect.protocol) and in its place
    (the waits' profile, taken first, still ends before pg_stat_activity's sampler)."""
    if plan.sample_interval_s:
        collectors.add(ActivitySampler(target.endpoint, server.version_num, plan.sample_interval_s,
                                       all_databases=plan.sample_all_databases, query_text=plan.query_text,
                                       sink=_activity_sink(writer), on_slow=say))
    else:
        collectors.leave_out(ActivitySampler.name, "--sample-interval 0")
    collectors.add(OsSampler(plan.os_interval_s))  # --os-interval 0: its records are empty
    if server_os is not None:
        collectors.add(server_os)
