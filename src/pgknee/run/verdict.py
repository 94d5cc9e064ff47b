"""What one step measured, judged: its figures from pgbench's log and summary, the facts of how
they were got, whether the step counts (and why not), and the lines that tell the person watching.
run.step gathers the phases into a `Sampled`; `judge` makes the frozen StepResult."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from pgknee.driver.execute import Execution
from pgknee.driver.measure import measure, read_transaction_logs
from pgknee.driver.pgbench import PgbenchRun, error_cause, log_files, parse_counts, parse_summary, window_of
from pgknee.driver.steady import SteadyWatch, steadiness
from pgknee.model.facts import AutoDuration, FactsDraft, Faults, Measured, RelayEnd, Steadiness, StepFacts
from pgknee.model.kinds import StepRecord, first_of
from pgknee.model.results import AgentShare, PgbenchSummary, StepMeasurement, StepResult
from pgknee.model.server import DatabaseStep
from pgknee.plan import Plan
from pgknee.run.distributed import Merged
from pgknee.run.schedule import StepSpec
from pgknee.run.session import RunSession
from pgknee.system import safefs


@dataclass
class Sampled:
    """What the phases around pgbench gathered, before it is judged."""

    run: PgbenchRun  # as it ran (its log's sampling rate chosen after the warm-up)
    execution: Execution
    bench_start: float
    bench_end: float
    own_commits: int  # pgknee's own reads of the statistics, commits in the benchmark database
    facts: FactsDraft
    pooler_died: str | None  # "pgbouncer died during the step: " and its last words, if it died
    idle_lost: int  # idle sessions the server ended during the step
    watch: SteadyWatch | None  # --duration auto: what stopped the step
    merged: Merged | None = None  # run by agents: their figures merged (run/distributed.py)
    records: tuple[StepRecord, ...] = ()  # what the collectors handed back (collect.protocol)

    @property
    def database(self) -> DatabaseStep | None:
        """pg_stat_database's change (none across a restart)."""
        return first_of(self.records, DatabaseStep)


def judge(s: RunSession, spec: StepSpec, step_id: int, step_dir: Path,
           x: Sampled) -> StepResult:
    """What the step measured, from pgbench's log and summary, and whether it counts."""
    plan, ex = s.plan, x.execution
    f = _figures(s, spec, step_dir, x)
    summary, window, m = f.summary, f.window_s, f.measurement
    for record in _measurement_facts(plan, m, window, x):
        x.facts.add(record)
    commits = x.database.xact_commit if x.database is not None else None
    tps_db = (commits - x.own_commits) / window if commits is not None and window > 0 else None
    own = _pgbench_failure(s, ex.exit_code, f.stderr, m) if f.agents_failed is None else f"agents: {f.agents_failed}"
    own = own or _not_counted(spec, plan.duration_s, summary, m, window, x.idle_lost)
    outside = _outside_causes(x.facts)
    failed = own is not None or bool(outside)
    if failed and x.pooler_died is not None:
        outside.append(x.pooler_died)
        x.facts.add(dataclasses.replace(x.facts.of(Faults) or Faults(), pooler_died=True))
    status = "failed" if failed else "completed"
    reason = "; ".join([*outside, *([own] if own else [])]) or None
    return StepResult(step_id, status, reason, ex.exit_code, x.bench_start, x.bench_end, summary, m, tps_db,
                      ex.progress, x.facts.freeze(), x.records, agents=f.agents)


@dataclass(frozen=True)
class _Figures:
    """What the step's pgbench measured: the local one's, or the agents' merged (run/distributed.py)."""

    summary: PgbenchSummary
    window_s: float
    measurement: StepMeasurement | None
    stderr: str  # the local pgbench's (the agents kept theirs)
    agents: tuple[AgentShare, ...] = ()  # each agent's part, when agents ran the step
    agents_failed: str | None = None  # why the agents' run does not count, when it does not


def _figures(s: RunSession, spec: StepSpec, step_dir: Path, x: Sampled) -> _Figures:
    if x.merged is not None:
        mg = x.merged
        return _Figures(mg.summary, mg.window_s, mg.measurement, "", mg.shares, mg.reason)
    summary = parse_summary(x.execution.stdout)
    window = window_of(summary, s.plan.duration_s)
    return _Figures(summary, window, *_measurement(s, spec, x.run, step_dir, window, x.execution))


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


def _measurement_facts(plan: Plan, m: StepMeasurement | None, window: float,
                       x: Sampled) -> list[Measured | Steadiness | AutoDuration]:
    """How the step's figures were got: the log's sampling rate and size, the measured window,
    and the steady-state judgement of pgbench's progress (MSER-5 warm-up, the interval)."""
    out: list[Measured | Steadiness | AutoDuration] = [
        Measured(window, x.run.log_sampling_rate, m.latency.count if m is not None and m.latency is not None else None,
                 x.own_commits)]
    target = plan.steady_pct / 100 if plan.steady_pct is not None else None
    # a step the watch stopped keeps the judgement that stopped it: judged again over the seconds pgbench
    # still printed while it stopped (several under load), it was once 'not steady' with steady.stopped 1
    judged = x.watch.last if x.watch is not None and x.execution.stopped_early else \
        steadiness([p.tps for p in x.execution.progress], target=target) if x.execution.progress else None
    if judged is not None and judged.steady:
        out.append(Steadiness(float(judged.warmup_s), judged.mean_tps, judged.halfwidth * 100))
    if x.watch is not None:
        out.append(AutoDuration(x.execution.stopped_early, x.watch.steady_at_s))
    return out


def _pgbench_failure(s: RunSession, rc: int, err: str, m: StepMeasurement | None) -> str | None:
    """Why pgbench's run does not count (it failed, or left no log), or None."""
    if rc == 0 and m is not None:
        return None
    why = error_cause(err) or f"exit code {rc}"
    if not s.target.alive():
        why = "the embedded server died: " + why
    return f"pgbench exit {rc}: {why}"


def _not_counted(spec: StepSpec, duration_s: int, summary: PgbenchSummary, m: StepMeasurement | None, window: float,
                 idle_lost: int) -> str | None:
    """Why a run pgbench completed does not count: it completed no transaction (it did nothing but
    connect: 256 clients through one pgbouncer process on a loaded 2-CPU machine spent a whole
    4 s step at it, and the step was taken for a completed one); the server ended some of the
    variant's idle sessions (the step did not measure what it says)."""
    if m is not None and m.transactions == 0:
        spent = summary.duration_s or (window if window > 0.5 else duration_s)
        opening = (f"opening its {spec.clients} connections took {summary.conn_time_ms / 1000:.1f} s"
                   if summary.conn_time_ms else f"its {spec.clients} clients were still connecting, or waiting")
        return f"pgbench completed no transaction in the {spent:.0f} s step ({opening}); lengthen --duration"
    if idle_lost > 0:
        return f"the server ended {idle_lost} of the {spec.variant.idle} idle sessions during the step"
    return None


def _outside_causes(facts: FactsDraft) -> list[str]:
    """What failed the step from outside pgbench, the most telling first: the server restarted (or
    could not be reached), pgknee's relay died."""
    out = []
    if (faults := facts.of(Faults)) is not None and faults.server_restarted:
        out.append("the server restarted or could not be reached during the step")
    if (relay := facts.of(RelayEnd)) is not None and (how := relay.death) is not None:
        out.append(f"the simulated network hop (pgknee's relay) died during the step ({how})")
    return out


def finished_line(spec: StepSpec, r: StepResult, several_variants: bool) -> str:
    """What the person watching is told when a step ends."""
    m = r.measurement
    if r.status == "completed" and m is not None and m.latency is not None:
        return (f"c{spec.clients} rep {spec.rep}{' ' + spec.variant.name if several_variants else ''}: "
                f"{m.tps:,.1f} tps, latency {m.latency.mean_ms:.2f} ms (p99 {m.latency.p99_ms:.2f}), {m.failed} failed"
                f"{steady_note(r.facts)}")
    return f"c{spec.clients} rep {spec.rep}: FAILED: {r.reason or 'no transaction completed in the step'}"


def steady_note(facts: StepFacts) -> str:
    """'; steady after 5 s, ±1.4% at 35 s (stopped)' for a --duration auto step; '' otherwise."""
    auto, measured, steady = facts.of(AutoDuration), facts.of(Measured), facts.of(Steadiness)
    if auto is None:
        return ""
    assert measured is not None  # _measurement_facts adds it to every step, first, and AutoDuration only beside it
    seconds = measured.bench_seconds
    if steady is None:
        return f"; not steady after {seconds:.0f} s (the maximum)"
    how = "stopped once known" if auto.stopped else "ran to its maximum"
    return f"; warm-up {steady.warmup_s:.0f} s, steady TPS ±{steady.halfwidth_pct:.1f}% at {seconds:.0f} s ({how})"


def ends_the_run(r: StepResult) -> bool:
    """A failed step whose pgbench could not run at all (its options, its first connection), or
    ran and completed nothing: the next would not either. A pgbench killed by a signal fails its
    step only, and so does one whose relay or pgbouncer died (in the probe before the bench, its
    first connection fails): the next step gets its own."""
    m = r.measurement
    relay, faults = r.facts.of(RelayEnd), r.facts.of(Faults)
    repaired = (relay is not None and relay.death is not None) or (faults is not None and bool(faults.pooler_died))
    return (r.status != "completed" and r.pgbench_exit >= 0 and not repaired
            and (r.pgbench_exit == 1 or m is None or m.transactions == 0))
