"""One step: its variant's server settings, its pooler and idle sessions, the samplers through
pre, (warmup,) bench and post phases, pgbench, and then what it measured, judged, as a frozen
StepResult. The step writes nothing itself but its 'running' row and its command lines; the
orchestrator hands the result to the store writer."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import psycopg

from pgknee import keys, safefs
from pgknee.collect import kcache, pgstats
from pgknee.collect.memory import memory_picture
from pgknee.driver.execute import Execution, execute
from pgknee.driver.measure import measure, read_transaction_logs
from pgknee.driver.pgbench import PgbenchRun, error_cause, log_files, parse_counts, parse_summary, window_of
from pgknee.driver.steady import SteadyWatch, steadiness
from pgknee.errors import Interrupted, PgkneeError
from pgknee.idle import IdleHolder
from pgknee.keys import PoolerFact, StepFact
from pgknee.plan import Plan
from pgknee.pooler.lab import StepPooler
from pgknee.rules import PROBE_S, log_sampling_rate
from pgknee.run.distributed import Merged
from pgknee.run.fleetstep import fleet_phase
from pgknee.run.network import step_network
from pgknee.run.replay import end_mix
from pgknee.run.schedule import StepSpec
from pgknee.run.scripts import pgbench_run
from pgknee.run.session import RunSession
from pgknee.targets.base import Endpoint
from pgknee.types import ActivitySamples, PoolerResult, StepMeasurement, StepResult, WaitSampling

T = TypeVar("T")


@dataclass
class _Sampled:
    """What the phases around pgbench gathered, before it is judged."""

    run: PgbenchRun  # as it ran (its log's sampling rate chosen after the warm-up)
    execution: Execution
    bench_start: float
    bench_end: float
    pg_delta: dict[str, float]
    own_commits: int  # pgknee's own reads of the statistics, commits in the benchmark database
    activity_samples: ActivitySamples | None
    os_rows: tuple[tuple[object, ...], ...]
    facts: dict[str, float]
    pooler: PoolerResult | None
    pooler_died: str | None  # pgbouncer's last words, if it died
    idle_lost: int  # idle sessions the server ended during the step
    watch: SteadyWatch | None  # --duration auto: what stopped the step
    server_os_rows: tuple[tuple[object, ...], ...] = ()  # the server's OS (run/machine.py), when sampled
    wait_sampling: WaitSampling | None = None  # pg_wait_sampling's profile of the bench phase
    merged: Merged | None = None  # run by agents: their figures merged (run/distributed.py)


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
    try:
        with contextlib.ExitStack() as stack:
            pooled = _enter(s, spec, step_id, lambda: _pooler(stack, s, spec))
            facts = dict(s.settings_facts)
            via = _enter(s, spec, step_id, lambda: step_network(stack, s, spec, pooled, facts))
            holder = _enter(s, spec, step_id, lambda: _idle(stack, s, spec, pooled, facts))
            sampled = _sample(s, spec, step_id, run, step_dir, pooled, holder, facts, via)
        result = _judge(s, spec, step_id, step_dir, sampled)
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
    managed = v.pooler is not None and v.pooler.kind == "managed"
    return {"seq": spec.seq, "variant": v.name, "clients": spec.clients, "rep": spec.rep, "threads": threads,
            "protocol": v.protocol, "duration_s": plan.duration_s, "warmup_s": plan.warmup_s,
            "pipeline": int(v.pipeline), "connect_per_txn": int(v.connect_per_txn), "rate": v.rate,
            "think_ms": v.think_ms, "pooler_kind": v.pooler.kind if v.pooler else None,
            "pool_mode": v.pooler.mode if v.pooler and managed else None,
            "pool_size": v.pooler.pool_size if v.pooler and managed else None,
            "pool_reserve": v.pooler.reserve if v.pooler and managed else 0, "idle": v.idle,
            "idle_kind": v.idle_kind if v.idle else None,
            "settings_json": _json(dict(v.settings)) if v.settings else None, "rtt_ms": v.rtt_ms,
            "rtt_jitter_ms": v.rtt_jitter_ms}


def _json(d: dict[str, str]) -> str:
    return json.dumps(d, sort_keys=True)


def _apply_settings(s: RunSession, spec: StepSpec) -> None:
    """Restart the server when this step's variant wants other settings than it runs with, and
    reconnect pgknee's own sessions; read back what the server took."""
    want = dict(spec.variant.settings)
    if not s.target.apply_settings(want, say=s.ui.say):
        return
    s.reader.reconnect()
    if s.activity is not None:
        s.activity.reconnect()
    if s.waits is not None:
        s.waits.reconnect()
    s.settings_facts = {}
    for name in want:
        row = s.reader.conn.execute("SELECT setting FROM pg_settings WHERE name = %s", (name,)).fetchone()
        with contextlib.suppress(TypeError, ValueError):
            s.settings_facts[keys.setting(name)] = float(row[0]) if row is not None else math.nan
    s.reader.reads += len(want)


def _enter(s: RunSession, spec: StepSpec, step_id: int, start: Callable[[], T]) -> T:
    """Start a step's pooler or idle sessions; if they will not start, the step fails with why."""
    try:
        return start()
    except PgkneeError as e:
        s.writer.fail_step(step_id, e.message)
        s.ui.step_finished(f"c{spec.clients} rep {spec.rep} {spec.variant.name}: FAILED: {e.message}")
        raise


def _pooler(stack: contextlib.ExitStack, s: RunSession, spec: StepSpec) -> StepPooler | None:
    """The step's pooler, if its variant has one, stopped when `stack` closes."""
    v = spec.variant
    if v.pooler is None:
        return None
    assert s.poolers is not None
    plan = s.plan
    pooled = stack.enter_context(s.poolers.step(v, s.target.endpoint, s.target.run_as, spec.clients,
                                                plan.duration_s + plan.warmup_s))
    s.os.pooler_pid = pooled.pid
    stack.callback(setattr, s.os, "pooler_pid", None)
    return pooled


def _idle(stack: contextlib.ExitStack, s: RunSession, spec: StepSpec, pooled: StepPooler | None,
          facts: dict[str, float]) -> IdleHolder | None:
    """The step's idle sessions, if its variant has any, closed when `stack` closes: through the
    pooler when there is one (as article 004 did), else to the server (the embedded one by its
    private socket: no SCRAM per session)."""
    v, plan = spec.variant, s.plan
    if not v.idle:
        return None
    facts.update(memory_picture(s.target.server_pid(), prefix=keys.BEFORE_IDLE))
    endpoint = pooled.endpoint if pooled is not None else s.target.session_endpoint
    hold_s = plan.duration_s + plan.warmup_s + plan.pre_s + plan.post_s + plan.idle_flush_s + 60
    holder = IdleHolder(endpoint, v.idle, v.idle_kind, sleep_s=hold_s,
                        timeout_s=max(120.0, v.idle * (1.0 if v.idle_kind == "catalog" else 0.1)))
    s.ui.say(f"opening {v.idle} idle sessions ({v.idle_kind})")
    holder.open()
    stack.callback(holder.close)
    facts.update({StepFact.IDLE_OPENED: float(len(holder.conns)), StepFact.IDLE_OPEN_S: holder.open_seconds})
    if v.idle_kind == "catalog":
        # their catalogue queries report to pg_stat_database once they have idled up to 10 s:
        # let that happen before the measured window
        time.sleep(plan.idle_flush_s)
    return holder


def _set_phase(s: RunSession, phase: str, pooled: StepPooler | None) -> None:
    if s.activity is not None:
        s.activity.phase = phase
    s.os.phase = phase
    if s.server_os is not None:
        s.server_os.phase = phase
    if pooled is not None and pooled.sampler is not None:
        pooled.sampler.phase = phase


def _run_pgbench(s: RunSession, run: PgbenchRun, env: dict[str, str], cwd: Path, *, progress: bool,
                 watch: SteadyWatch | None = None) -> Execution:
    def started(pid: int) -> None:
        s.os.client_pid = pid

    try:
        return execute(run, env=env, run_as=s.target.run_as, cwd=cwd,
                       cpus=s.poolers.client_cpus if s.poolers else None,
                       on_progress=s.ui.step_progress if progress else None, on_start=started,
                       stop_when=(lambda pt: watch.add(pt.tps)) if watch is not None else None)
    finally:
        s.os.client_pid = None


def _sample(s: RunSession, spec: StepSpec, step_id: int, run: PgbenchRun, step_dir: Path,
            pooled: StepPooler | None, holder: IdleHolder | None, facts: dict[str, float],
            via: Endpoint | None = None) -> _Sampled:
    """The phases: pre (samplers only), warmup (unmeasured pgbench), bench, post. pgbench
    connects `via` a simulated network hop when there is one (run.network)."""
    plan = s.plan
    reach = via or (pooled.endpoint if pooled is not None else None)
    env = reach.child_env(s.work_dir, s.target.run_as) if reach is not None else s.child_env
    if s.activity is not None:
        s.activity.begin_step(step_id)
    s.os.begin_step()
    if s.server_os is not None:
        s.server_os.begin_step()
    _wait_for_quiet(s, facts)
    _warm_up(s, spec, step_id, run, env, step_dir, pooled, facts)
    run = dataclasses.replace(run, log_sampling_rate=_sampling_rate(s, spec))
    s.writer.add_command(step_id, "bench", run.argv())
    if s.mix is not None:
        s.mix.begin()
    q0, r0, o0 = (s.activity.queries_run if s.activity else 0), s.reader.reads, _server_os_queries(s)
    before, pool_before = _statistics(s, facts, settle=False), _pooler_totals(pooled)
    _set_phase(s, "bench", pooled)
    watch = SteadyWatch(plan.steady_pct / 100, plan.min_duration_s) if plan.steady_pct is not None else None
    kc0 = _kcache(s)
    if s.waits is not None:
        s.waits.begin()
    bench_start = time.time()
    merged = fleet_phase(s, spec, run, step_id, "bench", facts) if s.fleet is not None else None
    execution = _run_pgbench(s, run, env, step_dir, progress=True, watch=watch) if merged is None else \
        Execution(merged.exit_code, "", merged.reason or "", merged.progress)
    bench_end = time.time()
    if s.waits is not None:
        s.waits.end()
    facts.update(kcache.deltas(kc0, _kcache(s)))
    _set_phase(s, "post", pooled)
    pooler, died = _pooler_after(pooled, pool_before)
    idle_alive = _end_facts(s, holder, pooled, facts)
    after = _statistics(s, facts, settle=True)
    if pgstats.restarted(before, after):
        facts[StepFact.SERVER_RESTARTED] = 1.0
    end_mix(s.mix, s.writer, step_id)
    own = (s.activity.queries_run - q0 if s.activity else 0) + (s.reader.reads - r0) + (_server_os_queries(s) - o0)
    rest = plan.post_s - (time.time() - bench_end)
    if rest > 0:
        time.sleep(rest)
    profile = s.waits.result(s.activity.bench_pids()) if s.waits is not None and s.activity is not None else None
    return _Sampled(run, execution, bench_start, bench_end, pgstats.delta(before, after), own,
                    s.activity.end_step() if s.activity else None, tuple(s.os.end_step()), facts, pooler, died,
                    spec.variant.idle - idle_alive if holder is not None else 0, watch,
                    tuple(s.server_os.end_step()) if s.server_os is not None else (), profile, merged)


def _kcache(s: RunSession) -> dict[str, float] | None:
    """pg_stat_kcache's totals, on the statistics connection (a read of pgknee's own)."""
    if s.kcache is None:
        return None
    s.reader.reads += 1
    return kcache.totals(s.reader.conn, s.kcache)


def _server_os_queries(s: RunSession) -> int:
    """pgknee's reads of the server's /proc through SQL: commits in the benchmark database."""
    return int(getattr(s.server_os.read, "queries_run", 0)) if s.server_os is not None else 0


def _wait_for_quiet(s: RunSession, facts: dict[str, float]) -> None:
    """The 'pre' phase: as long as the server needs to be quiet (the last step's backends gone,
    no immediate checkpoint running), at most --pre; measured and recorded, not slept."""
    try:
        q = s.reader.quiet(s.plan.pre_s, shortest_s=min(0.3, s.plan.pre_s))
    except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
        raise
    except (psycopg.Error, PgkneeError):
        return  # the step will find out about the server: waiting for it here would tell nothing
    facts[StepFact.QUIET_WAIT_S] = q.waited_s
    if q.backends_left:
        facts[StepFact.QUIET_BACKENDS_LEFT] = float(q.backends_left)
    if q.checkpointing or q.spread_checkpoint:
        facts[StepFact.QUIET_CHECKPOINT] = 1.0 if q.checkpointing else 0.5


def _warm_up(s: RunSession, spec: StepSpec, step_id: int, run: PgbenchRun, env: dict[str, str], step_dir: Path,
             pooled: StepPooler | None, facts: dict[str, float]) -> None:
    """The unmeasured run before the bench: the plan's warm-up, or a short probe when the log's
    sampling rate needs a TPS and none is known yet (the variant's first step). Its progress tells
    the TPS; its transactions are a fact (the workload's books count them)."""
    plan, v = s.plan, spec.variant
    probe = plan.log_sampling_rate is None and v.name not in s.tps_seen and s.fleet is None
    seconds = plan.warmup_s or (PROBE_S if probe else 0)
    if not seconds:
        return
    _set_phase(s, "warmup", pooled)
    warm = pgbench_run(plan, s.prepared.pgbench, v, s.scripts[v.name], s.prepared.workload.defines(),
                       clients=spec.clients, threads=run.threads, seconds=seconds, log_prefix=None, progress=probe)
    s.writer.add_command(step_id, "warmup", warm.argv())
    if s.fleet is not None:  # the agents warm up as they will run: together
        fleet_phase(s, spec, warm, step_id, "warmup", facts)
        return
    ex = _run_pgbench(s, warm, env, step_dir, progress=False)
    facts[StepFact.WARMUP_TRANSACTIONS] = float(parse_summary(ex.stdout).transactions or 0)  # the books count them
    rates = [p.tps for p in ex.progress[1:] if p.tps > 0] or [p.tps for p in ex.progress if p.tps > 0]
    if probe and rates:
        s.tps_seen[v.name] = statistics.median(rates)
        facts[StepFact.PROBE_TPS] = s.tps_seen[v.name]


def _statistics(s: RunSession, facts: dict[str, float], *, settle: bool) -> dict[str, float]:
    """pg_stat_database now (once it settled, after pgbench); none, and the step marked, when
    the server cannot be reached even on a new connection (it restarted, or failed over)."""
    try:
        return s.reader.settled() if settle else s.reader.snapshot()
    except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
        raise
    except (psycopg.OperationalError, PgkneeError):
        facts[StepFact.SERVER_RESTARTED] = 1.0
        return {}


def _end_facts(s: RunSession, holder: IdleHolder | None, pooled: StepPooler | None,
               facts: dict[str, float]) -> int:
    """The memory picture at the end of the step and how many idle sessions are still open."""
    facts.update(memory_picture(s.target.server_pid(), holder.backend_pids if holder and pooled is None else (),
                                prefix=keys.AT_END))
    idle_alive = holder.alive() if holder is not None else 0
    if holder is not None:
        facts[StepFact.IDLE_OPEN_AT_END] = float(idle_alive)
    return idle_alive


def _pooler_totals(pooled: StepPooler | None) -> dict[str, float] | None:
    if pooled is None or pooled.sampler is None or not pooled.alive():
        return None
    try:
        return pooled.sampler.totals()
    except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
        raise
    except (PgkneeError, psycopg.Error):
        return None


def _pooler_after(pooled: StepPooler | None, before: dict[str, float] | None) -> tuple[PoolerResult | None,
                                                                                        str | None]:
    """SHOW STATS at the end, the SHOW POOLS samples, and whether pgbouncer died (its last words)."""
    if pooled is None:
        return None, None
    after = _pooler_totals(pooled)
    died = None if pooled.alive() else (pooled.log_tail() or "no message in its log")
    rows = tuple(pooled.sampler.close()) if pooled.sampler is not None else ()
    # the pool's server connections would sit idle and flush their statistics only after up to
    # 10 s: close them so pg_stat_database counts the step now
    pooled.release()
    facts = dict(pooled.facts)
    if before is not None and after is not None:
        facts.update({keys.pooler_delta(k): repr(after[k] - before.get(k, 0.0)) for k in after})
    elif pooled.sampler is None:
        facts[PoolerFact.MISSING] = "no admin console (give --pooler-admin-dsn)"
    else:
        facts[PoolerFact.MISSING] = "the console did not answer at the end of the step"
    if pooled.sampler is not None and pooled.sampler.errors:
        facts[PoolerFact.SAMPLER_ERRORS] = " | ".join(pooled.sampler.errors)
    return PoolerResult(rows, facts), died


def _judge(s: RunSession, spec: StepSpec, step_id: int, step_dir: Path,
           x: _Sampled) -> StepResult:
    """What the step measured, from pgbench's log and summary, and whether it counts."""
    plan, v, ex, run = s.plan, spec.variant, x.execution, x.run
    summary = parse_summary(ex.stdout) if x.merged is None else x.merged.summary
    window = window_of(summary, plan.duration_s) if x.merged is None else x.merged.window_s
    m, err = _measurement(s, spec, run, step_dir, window, ex) if x.merged is None else (x.merged.measurement, "")
    x.facts.update(_measurement_facts(plan, m, window, x))
    tps_db = ((x.pg_delta["xact_commit"] - x.own_commits) / window
              if "xact_commit" in x.pg_delta and window > 0 else None)
    status, reason = _verdict(s, ex.exit_code, err, m) if x.merged is None or x.merged.reason is None else \
        ("failed", f"agents: {x.merged.reason}")
    if status == "completed" and m is not None and m.transactions == 0 and window <= 0.5:
        status, reason = "failed", (f"pgbench spent the whole {summary.duration_s or plan.duration_s:.0f} s step "
                                    f"opening its {spec.clients} connections "
                                    f"({(summary.conn_time_ms or 0) / 1000:.1f} s); lengthen --duration")
    if status == "completed" and x.idle_lost > 0:
        status, reason = "failed", f"the server ended {x.idle_lost} of the {v.idle} idle sessions during the step"
    if status == "failed" and x.pooler_died is not None:
        reason = f"pgbouncer died during the step: {x.pooler_died}; {reason}"
        x.facts[StepFact.POOLER_DIED] = 1.0
    if (died := x.facts.get(StepFact.NET_RELAY_DIED)) is not None:
        status, reason = "failed", (f"the simulated network hop (pgknee's relay) died during the step "
                                    f"({f'signal {-int(died)}' if died < 0 else f'exit code {int(died)}'}); {reason}")
    if x.facts.get(StepFact.SERVER_RESTARTED):
        status, reason = "failed", f"the server restarted or could not be reached during the step; {reason}"
    return StepResult(step_id, status, reason, ex.exit_code, x.bench_start, x.bench_end, summary, m, tps_db,
                      x.pg_delta, ex.progress, x.activity_samples, x.os_rows, x.facts, x.pooler,
                      server_os_rows=x.server_os_rows, wait_sampling=x.wait_sampling,
                      agents=x.merged.shares if x.merged is not None else ())


def _measurement(s: RunSession, spec: StepSpec, run: PgbenchRun, step_dir: Path, window: float,
                 ex: Execution) -> tuple[StepMeasurement | None, str]:
    """The transaction log, read only where pgbench's user wrote plain files of its own; the
    counts from pgbench's summary when it logged a share of the transactions."""
    plan, v, err = s.plan, spec.variant, ex.stderr
    logs = log_files(step_dir / "log")
    if not logs:
        return None, err
    try:
        log = read_transaction_logs(logs, has_lag=bool(v.rate),
                                    has_retries=run.version_num >= 150000 and plan.max_tries != 1,
                                    opener=lambda p: os.fdopen(safefs.open_child_file(p, s.target.run_as), "rb"),
                                    think_us=round(v.think_ms * 1000))
    except OSError as e:  # a log that is a link, or not pgbench's
        return None, f"{err}\npgbench's log could not be read safely: {e}"
    return measure(log, run.scripts, max(window, 1e-3), rate=run.log_sampling_rate, counts=parse_counts(ex.stdout)), err


def _measurement_facts(plan: Plan, m: StepMeasurement | None, window: float, x: _Sampled) -> dict[str, float]:
    """How the step's figures were got: the log's sampling rate and size, the measured window,
    and the steady-state judgement of pgbench's progress (MSER-5 warm-up, the interval)."""
    facts: dict[str, float] = {StepFact.LOG_SAMPLING_RATE: x.run.log_sampling_rate, StepFact.BENCH_SECONDS: window}
    if m is not None and m.latency is not None:
        facts[StepFact.LOG_TRANSACTIONS] = float(m.latency.count)
    watch = x.watch
    target = plan.steady_pct / 100 if plan.steady_pct is not None else None
    judged = steadiness([p.tps for p in x.execution.progress], target=target) if x.execution.progress else None
    if judged is not None and judged.steady:
        facts.update({StepFact.STEADY_WARMUP_S: float(judged.warmup_s), StepFact.STEADY_TPS: judged.mean_tps,
                      StepFact.STEADY_HALFWIDTH_PCT: judged.halfwidth * 100})
    if watch is not None:
        facts[StepFact.STEADY_STOPPED] = 1.0 if x.execution.stopped_early else 0.0
        if watch.steady_at_s is not None:
            facts[StepFact.STEADY_AT_S] = float(watch.steady_at_s)
    return facts


def _verdict(s: RunSession, rc: int, err: str, m: StepMeasurement | None) -> tuple[str, str | None]:
    if rc == 0 and m is not None:
        return "completed", None
    why = error_cause(err) or f"exit code {rc}"
    if not s.target.alive():
        why = "the embedded server died: " + why
    return "failed", f"pgbench exit {rc}: {why}"


def finished_line(spec: StepSpec, r: StepResult, several_variants: bool) -> str:
    """What the person watching is told when a step ends."""
    m = r.measurement
    if r.status == "completed" and m is not None and m.latency is not None:
        return (f"c{spec.clients} rep {spec.rep}{' ' + spec.variant.name if several_variants else ''}: "
                f"{m.tps:,.1f} tps, latency {m.latency.mean_ms:.2f} ms (p99 {m.latency.p99_ms:.2f}), {m.failed} failed"
                f"{steady_note(r.facts)}")
    return f"c{spec.clients} rep {spec.rep}: FAILED: {r.reason or 'no transaction completed in the step'}"


def steady_note(facts: dict[str, float]) -> str:
    """'; steady after 5 s, ±1.4% at 35 s (stopped)' for a --duration auto step; '' otherwise."""
    if StepFact.STEADY_STOPPED not in facts:
        return ""
    seconds = facts.get(StepFact.BENCH_SECONDS, 0.0)
    if StepFact.STEADY_HALFWIDTH_PCT not in facts:
        return f"; not steady after {seconds:.0f} s (the maximum)"
    how = "stopped once known" if facts[StepFact.STEADY_STOPPED] else "ran to its maximum"
    warmup, half = facts[StepFact.STEADY_WARMUP_S], facts[StepFact.STEADY_HALFWIDTH_PCT]
    return f"; warm-up {warmup:.0f} s, steady TPS ±{half:.1f}% at {seconds:.0f} s ({how})"


def ends_the_run(r: StepResult) -> bool:
    """A failed step whose pgbench could not run at all (its options, its first connection), or
    ran and completed nothing: the next would not either. A pgbench killed by a signal fails its
    step only, and so does one whose relay or pgbouncer died (in the probe before the bench, its
    first connection fails): the next step gets its own."""
    m = r.measurement
    repaired = StepFact.NET_RELAY_DIED in r.facts or StepFact.POOLER_DIED in r.facts
    return (r.status != "completed" and r.pgbench_exit >= 0 and not repaired
            and (r.pgbench_exit == 1 or m is None or m.transactions == 0))
