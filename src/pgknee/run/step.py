"""One step: its variant's server settings, its pooler and idle sessions, the samplers through
pre, (warmup,) bench and post phases, pgbench, and then what it measured, judged, as a frozen
StepResult. The step writes nothing itself but its 'running' row and its command lines; the
orchestrator hands the result to the store writer."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psycopg

from pgknee.base.errors import Interrupted, PgkneeError
from pgknee.collect import queries
from pgknee.collect.memory import memory_picture
from pgknee.collect.protocol import StepProcesses
from pgknee.driver.execute import Execution, execute
from pgknee.driver.pgbench import PgbenchRun, parse_summary
from pgknee.driver.steady import SteadyWatch
from pgknee.model.facts import (
    FactsDraft,
    Faults,
    IdleSessions,
    MemoryAtEnd,
    MemoryBeforeIdle,
    QuietWait,
    Settings,
    Warmup,
)
from pgknee.model.kinds import StepRecord, first_of
from pgknee.model.results import ProgressPoint, StepResult
from pgknee.model.rules import PROBE_S, log_sampling_rate
from pgknee.model.samples import PoolerFacts
from pgknee.model.server import ServerRestart
from pgknee.plan import PoolerSpec
from pgknee.pooler.lab import StepPooler
from pgknee.run.fleetstep import fleet_phase
from pgknee.run.idle import IdleHolder
from pgknee.run.network import step_network
from pgknee.run.schedule import StepSpec
from pgknee.run.scripts import pgbench_run
from pgknee.run.session import RunSession
from pgknee.run.verdict import Sampled, judge
from pgknee.system import safefs
from pgknee.targets.base import Endpoint

T = TypeVar("T")


def run_step(s: RunSession, spec: StepSpec, index: int, total: int) -> StepResult:
    plan, v = s.plan, spec.variant
    _apply_settings(s, spec)
    threads = plan.threads_for(spec.clients, s.cpus)
    step_id = s.writer.begin_step(_step_row(s, spec, threads))
    s.ui.step_started(index, total, v.name, spec.clients, spec.rep, plan.duration_s + plan.warmup_s)
    # pgbench's own (it writes its logs there): read back with safefs.open_child_file
    step_dir = safefs.make_dir(s.work_dir / f"step-{spec.seq}", owner=s.target.run_as)
    # its log's sampling rate is settled after the warm-up (which may be what tells the TPS)
    run = pgbench_run(plan, s.prepared.pgbench, v, s.scripts[v.name], s.prepared.workload.defines(),
                      clients=spec.clients, threads=threads, seconds=plan.duration_s, log_prefix=step_dir / "log",
                      progress=True)
    procs = StepProcesses(step_id)  # the collectors watch them as the step starts them
    try:
        with contextlib.ExitStack() as stack:
            pooled = _enter(s, spec, step_id, lambda: _pooler(stack, s, spec, procs))
            facts = FactsDraft(s.settings)
            via = _enter(s, spec, step_id, lambda: step_network(stack, s, spec, pooled, facts))
            holder = _enter(s, spec, step_id, lambda: _idle(stack, s, spec, pooled, facts))
            sampled = _sample(s, spec, procs, run, step_dir, pooled, holder, facts, via)
        result = judge(s, spec, step_id, step_dir, sampled)
        if result.status == "completed" and result.measurement is not None and result.measurement.tps > 0:
            s.tps_seen[v.name] = result.measurement.tps
        return result
    finally:
        shutil.rmtree(step_dir, ignore_errors=True)


def _sampling_rate(s: RunSession, spec: StepSpec) -> float:
    """The share of transactions pgbench logs: the user's, or enough for the percentiles
    (rules.log_sampling_rate) judged from the variant's last TPS (its last step's, or the probe's
    before its first), less a quarter in case this step's is lower; all when none is known."""
    plan = s.plan
    if plan.log_sampling_rate is not None:
        return plan.log_sampling_rate
    seen = s.tps_seen.get(spec.variant.name)
    shortest = plan.min_duration_s if plan.steady_pct is not None else plan.duration_s
    return log_sampling_rate(seen * shortest * 0.75 if seen else None)


def _step_row(s: RunSession, spec: StepSpec, threads: int) -> dict[str, object]:
    v, plan = spec.variant, s.plan
    return {"seq": spec.seq, "variant": v.name, "clients": spec.clients, "rep": spec.rep, "threads": threads,
            "protocol": v.protocol, "duration_s": plan.duration_s, "warmup_s": plan.warmup_s,
            "pipeline": int(v.pipeline), "connect_per_txn": int(v.connect_per_txn), "rate": v.rate,
            "think_ms": v.think_ms, **_pool_columns(v.pooler), "idle": v.idle,
            "idle_kind": v.idle_kind if v.idle else None,
            "settings_json": _json(dict(v.settings)) if v.settings else None, "rtt_ms": v.rtt_ms,
            "rtt_jitter_ms": v.rtt_jitter_ms}


_NO_POOL: dict[str, object] = {"pooler_kind": None, "pool_mode": None, "pool_size": None, "pool_reserve": 0,
                               "pool_processes": 1}


def _pool_columns(p: PoolerSpec | None) -> dict[str, object]:
    """The step row's pooler columns: its kind, and the pool pgknee sets up (a managed pgbouncer's
    or pgpool's) all together; your own pooler's pool is not pgknee's to say."""
    if p is None:
        return _NO_POOL
    if p.kind == "external":
        return {**_NO_POOL, "pooler_kind": p.kind}
    # pgpool-II gives each client session a child and its server connection: session pooling
    return {"pooler_kind": p.kind, "pool_mode": "session" if p.kind == "pgpool" else p.mode,
            "pool_size": p.pool_size, "pool_reserve": p.reserve, "pool_processes": p.processes}


def _json(d: dict[str, str]) -> str:
    return json.dumps(d, sort_keys=True)


def _apply_settings(s: RunSession, spec: StepSpec) -> None:
    """Restart the server when this step's variant wants other settings than it runs with, and
    reconnect pgknee's own sessions; read back what the server took."""
    want = dict(spec.variant.settings)
    if not s.target.apply_settings(want, say=s.ui.say):
        return
    s.reader.reconnect()
    s.collectors.reconnect()
    took: list[tuple[str, float]] = []
    for name in want:
        row = s.reader.conn.execute(queries.text("setting_value"), (name,)).fetchone()
        with contextlib.suppress(TypeError, ValueError):  # a setting that is not a number is in the variant's name
            if row is not None:
                took.append((name, float(row[0])))
    s.settings = Settings(tuple(took)) if took else None
    s.reader.reads += len(want)


def _enter(s: RunSession, spec: StepSpec, step_id: int, start: Callable[[], T]) -> T:
    """Start a step's pooler or idle sessions; if they will not start, the step fails with why."""
    try:
        return start()
    except PgkneeError as e:
        s.writer.fail_step(step_id, e.message)
        s.ui.step_finished(f"c{spec.clients} rep {spec.rep} {spec.variant.name}: FAILED: {e.message}")
        raise


def _pooler(stack: contextlib.ExitStack, s: RunSession, spec: StepSpec, procs: StepProcesses) -> StepPooler | None:
    """The step's pooler, if its variant has one, stopped when `stack` closes (its processes the
    step's); its console's sampler joins the run's collectors for the step."""
    v = spec.variant
    if v.pooler is None:
        return None
    plan = s.plan
    pooled = stack.enter_context(s.poolers.step(v, s.target.endpoint, s.target.run_as, spec.clients,
                                                plan.duration_s + plan.warmup_s))
    procs.pooler = pooled.pids
    if pooled.sampler is not None:
        stack.enter_context(s.collectors.joined(pooled.sampler, procs))
    return pooled


def _idle(stack: contextlib.ExitStack, s: RunSession, spec: StepSpec, pooled: StepPooler | None,
          facts: FactsDraft) -> IdleHolder | None:
    """The step's idle sessions, if its variant has any, closed when `stack` closes: through the
    pooler when there is one (as article 004 did), else to the server (the embedded one by its
    private socket: no SCRAM per session)."""
    v, plan = spec.variant, s.plan
    if not v.idle:
        return None
    facts.add(memory_picture(MemoryBeforeIdle, s.target.server_pid()))
    endpoint = pooled.endpoint if pooled is not None else s.target.session_endpoint
    hold_s = plan.duration_s + plan.warmup_s + plan.pre_s + plan.post_s + plan.idle_flush_s + 60
    holder = IdleHolder(endpoint, v.idle, v.idle_kind, sleep_s=hold_s,
                        timeout_s=max(120.0, v.idle * (1.0 if v.idle_kind == "catalog" else 0.1)))
    s.ui.say(f"opening {v.idle} idle sessions ({v.idle_kind})")
    holder.open()
    stack.callback(holder.close)
    facts.add(IdleSessions(len(holder.conns), holder.open_seconds))
    if v.idle_kind == "catalog":
        # their catalogue queries report to pg_stat_database once they have idled up to 10 s:
        # let that happen before the measured window
        time.sleep(plan.idle_flush_s)
    return holder


def _run_pgbench(s: RunSession, procs: StepProcesses, run: PgbenchRun, env: dict[str, str], cwd: Path, *,
                 on_progress: Callable[[ProgressPoint], None] | None, watch: SteadyWatch | None = None) -> Execution:
    def started(pid: int) -> None:
        procs.client = pid

    try:
        return execute(run, env=env, run_as=s.target.run_as, cwd=cwd,
                       cpus=s.poolers.client_cpus,
                       on_progress=on_progress, on_start=started,
                       stop_when=(lambda pt: watch.add(pt.tps)) if watch is not None else None)
    finally:
        procs.client = None


def _sample(s: RunSession, spec: StepSpec, procs: StepProcesses, run: PgbenchRun, step_dir: Path,
            pooled: StepPooler | None, holder: IdleHolder | None, facts: FactsDraft,
            via: Endpoint | None = None) -> Sampled:
    """The phases: pre (samplers only), warmup (unmeasured pgbench), bench, post. pgbench
    connects `via` a simulated network hop when there is one (run.network)."""
    plan, step_id = s.plan, procs.step_id
    reach = via or (pooled.endpoint if pooled is not None else None)
    env = reach.child_env(s.work_dir, s.target.run_as) if reach is not None else s.child_env
    s.collectors.begin_step(procs)
    facts.add(_wait_for_quiet(s))
    if _warm_up(s, spec, procs, run, env, step_dir, facts) and pooled is not None:
        _close_pool(s, pooled, procs)
    # the workload's variables as the target stands after the warm-up (a replay's fresh keys above its rows)
    run = dataclasses.replace(run, log_sampling_rate=_sampling_rate(s, spec), defines=_defines(s, spec.clients))
    s.writer.add_command(step_id, "bench", run.argv())
    own0 = _own_reads(s)
    watch = SteadyWatch(plan.steady_pct / 100, plan.min_duration_s) if plan.steady_pct is not None else None
    _collect(s, facts, lambda: s.collectors.set_phase("bench"))  # the server's counters read, the samplers told
    bench_start = time.time()
    merged = fleet_phase(s, spec, run, step_id, "bench", facts) if s.fleet is not None else None
    execution = (_run_pgbench(s, procs, run, env, step_dir, on_progress=s.ui.step_progress, watch=watch)
                 if merged is None else Execution(merged.exit_code, "", merged.reason or "", merged.progress))
    bench_end = time.time()
    _collect(s, facts, lambda: s.collectors.set_phase("post"))
    pooler, died = _pooler_after(s, pooled)
    idle_alive = _end_facts(s, holder, pooled, facts)
    _collect(s, facts, s.collectors.settled)  # pg_stat_database waits for its counters to settle, the others read
    own = _own_reads(s) - own0
    rest = plan.post_s - (time.time() - bench_end)
    if rest > 0:
        time.sleep(rest)
    records = s.collectors.end_step()
    if any(isinstance(r, ServerRestart) for r in records):
        _restarted(facts)
    # without idle sessions (holder None) the variant's idle is 0 and so is idle_alive: none lost
    return Sampled(run, execution, bench_start, bench_end, own, facts, died, spec.variant.idle - idle_alive, watch,
                   merged, tuple(r for r in records if not isinstance(r, ServerRestart)) + pooler)


def _collect(s: RunSession, facts: FactsDraft, moment: Callable[[], None]) -> None:
    """A moment of the collectors (collect.protocol), again on a new statistics session once if
    that one was lost (a DBA ended it, a blip): the collectors go on from the one that failed;
    the step marked when the server cannot be reached even so (it restarted, or failed over)."""
    for attempt in (1, 2):
        try:
            return moment()
        except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
            raise
        except psycopg.OperationalError:
            if attempt == 2:
                break
            try:
                s.reader.reconnect()
            except (psycopg.Error, PgkneeError):
                break
    _restarted(facts)
    return None


def _restarted(facts: FactsDraft) -> None:
    """The server restarted, failed over or could not be reached during the step."""
    facts.add(dataclasses.replace(facts.of(Faults) or Faults(), server_restarted=True))


def _own_reads(s: RunSession) -> int:
    """pgknee's own statements in the benchmark database so far, each a commit there: the
    collectors' (the server's counters, pg_stat_activity's sampler, the reads of the server's /proc
    through SQL, pg_wait_sampling's profile when it is read there) and the statistics session's."""
    return s.collectors.queries_run + s.reader.reads


def _wait_for_quiet(s: RunSession) -> QuietWait | None:
    """The 'pre' phase: as long as the server needs to be quiet (the last step's backends gone,
    no immediate checkpoint running), at most --pre; measured and recorded, not slept."""
    try:
        q = s.reader.quiet(s.plan.pre_s, shortest_s=min(0.3, s.plan.pre_s))
    except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
        raise
    except (psycopg.Error, PgkneeError):
        return None  # the step will find out about the server: waiting for it here would tell nothing
    return QuietWait(q.waited_s, q.backends_left or None, q.checkpointing or None,
                     (q.spread_checkpoint and not q.checkpointing) or None)


def _defines(s: RunSession, clients: int) -> tuple[tuple[str, str], ...]:
    """The workload's pgbench variables, read now on the statistics session (a captured replay's
    fresh keys start above the highest its tables hold)."""
    try:
        return tuple(sorted(s.prepared.workload.defines(s.reader.conn, clients).items()))
    except psycopg.OperationalError:
        s.reader.reconnect()
        return tuple(sorted(s.prepared.workload.defines(s.reader.conn, clients).items()))


def _warm_up(s: RunSession, spec: StepSpec, procs: StepProcesses, run: PgbenchRun, env: dict[str, str],
             step_dir: Path, facts: FactsDraft) -> bool:
    """The unmeasured run before the bench: the plan's warm-up, or a short probe when the log's
    sampling rate needs a TPS and none is known yet (the variant's first step). Its progress tells
    the TPS; its transactions are a fact (the workload's books count them)."""
    plan, v, step_id = s.plan, spec.variant, procs.step_id
    probe = plan.log_sampling_rate is None and v.name not in s.tps_seen and s.fleet is None
    seconds = plan.warmup_s or (PROBE_S if probe else 0)
    if not seconds:
        return False
    s.collectors.set_phase("warmup")
    warm = pgbench_run(plan, s.prepared.pgbench, v, s.scripts[v.name], dict(_defines(s, spec.clients)),
                       clients=spec.clients, threads=run.threads, seconds=seconds, log_prefix=None, progress=probe)
    s.writer.add_command(step_id, "warmup", warm.argv())
    if s.fleet is not None:  # the agents warm up as they will run: together
        fleet_phase(s, spec, warm, step_id, "warmup", facts)
        return True
    ex = _run_pgbench(s, procs, warm, env, step_dir, on_progress=None)
    rates = [p.tps for p in ex.progress[1:] if p.tps > 0] or [p.tps for p in ex.progress if p.tps > 0]
    if probe and rates:
        s.tps_seen[v.name] = statistics.median(rates)
    facts.add(Warmup(parse_summary(ex.stdout).transactions or 0,  # the workload's books count them
                     s.tps_seen[v.name] if probe and rates else None))
    return True


def _close_pool(s: RunSession, pooled: StepPooler, procs: StepProcesses) -> None:
    """The warm-up's server connections closed: idle in the pool, they would report its
    transactions to pg_stat_database only after up to 10 s, inside the bench phase (a pooled
    variant's first step read 13% more commits than transactions). The bench opens its own."""
    try:
        closed = pooled.close_servers()
        procs.pooler = pooled.pids_now()  # pgpool is started again: new processes
        if not closed:
            s.ui.say("the pool's server connections were still open 3 s after RECONNECT: the step's commits may "
                     "count some of the warm-up's")
    except Interrupted:
        raise
    except (PgkneeError, psycopg.Error):
        return  # the step finds out about its pooler


def _end_facts(s: RunSession, holder: IdleHolder | None, pooled: StepPooler | None,
               facts: FactsDraft) -> int:
    """The memory picture at the end of the step and how many idle sessions are still open."""
    facts.add(memory_picture(MemoryAtEnd, s.target.server_pid(),
                             holder.backend_pids if holder and pooled is None else ()))
    if holder is None:
        return 0
    idle_alive = holder.alive()
    if (opened := facts.of(IdleSessions)) is not None:
        facts.add(dataclasses.replace(opened, open_at_end=idle_alive))
    return idle_alive


def _pooler_after(s: RunSession, pooled: StepPooler | None) -> tuple[tuple[StepRecord, ...], str | None]:
    """The pooler's records (its console's collector leaves with them: the SHOW POOLS samples and
    how it ran, with its SHOW STATS deltas), and whether it died (its last words)."""
    if pooled is None:
        return (), None
    died = None if pooled.alive() else \
        f"{pooled.name} died during the step: {pooled.log_tail() or 'no message in its log'}"
    records = s.collectors.leave(pooled.sampler) if pooled.sampler is not None else ()
    if first_of(records, PoolerFacts) is None:  # no console, or its collector was lost during the step
        why = "no admin console (give --pooler-admin-dsn)" if pooled.sampler is None else \
            "the console's collector was lost during the step"
        records = (*records, dataclasses.replace(pooled.facts, missing=why))
    # the pool's server connections would sit idle and flush their statistics only after up to
    # 10 s: close them so pg_stat_database counts the step now
    pooled.release()
    return records, died
