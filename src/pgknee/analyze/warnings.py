"""What a reader of a run must be told before trusting it: an interrupted or failed run or
step, one repetition, noisy counts, a pooler at its ceiling, slow connecting, checks that
warned, short steps, money not conserved. Pure."""

from __future__ import annotations

from pgknee.analyze.agents import agent_warnings
from pgknee.analyze.holdcheck import hold_warnings, run_hold_check
from pgknee.analyze.view import Group, PoolerRow, RunView
from pgknee.analyze.words import plural
from pgknee.model.facts import ActivityGaps, Faults, StepFacts
from pgknee.model.keys import CheckStatus
from pgknee.model.results import RunData
from pgknee.model.rules import measured_window


def run_warnings(view: RunView) -> list[str]:
    data = view.data
    done = [s for s in data.steps if s.status == "completed"]
    out = _run_status(data, len(done))
    plan = data.run.plan
    if plan.get("reps", 1) == 1 and len(done) > 1:
        out.append("one repetition per step: run-to-run noise (about ±15% on small shared machines) is not "
                   "visible; use --reps 3 before drawing conclusions")
    for g in view.groups:
        out += _group_warnings(g.label + view.named(g.variant), g)
    if plan.get("duration_s", 60) < 60 and done:
        out.append("steps are shorter than a minute: the 1-minute load average lags behind them; "
                   "read runnable processes (procs running) instead")
    money = view.money
    if money is not None and money.ok is False:
        out.append(money.text)
    held = hold_warnings(run_hold_check(data))
    return out + _hidden(data) + agent_warnings(data) + held


def _hidden(data: RunData) -> list[str]:
    """Backends pg_stat_activity showed the sampling role without their state or wait event."""
    if not data.hidden:
        return []
    return [f"pg_stat_activity hid {max(data.hidden.values()):.1f} backends per snapshot on average (the step that hid "
            "most) from this run's role "
            "(the server's background processes, other roles' sessions): their wait events are in no profile; "
            "GRANT pg_read_all_stats TO the role (it reads statistics only) to see them"]


def _run_status(data: RunData, done: int) -> list[str]:
    out: list[str] = []
    run = data.run
    if run.status == "interrupted":
        out.append(f"the run was interrupted after {done} of {run.steps_planned} steps; "
                   "the completed steps are shown")
    elif run.status == "abandoned":
        out.append(f"the run was abandoned after {done} of {run.steps_planned} steps ({run.status_reason}); "
                   f"'pgknee run --resume {run.run_id}' runs the rest")
    elif run.status == "failed":
        out.append(f"the run failed: {run.status_reason}")
    for s in data.steps:
        if s.status == "failed":
            out.append(f"step c{s.clients} rep {s.rep} failed: {s.status_reason}")
    return out + _gaps(data)


def _facts(data: RunData, step_id: int) -> StepFacts:
    return data.facts.get(step_id, StepFacts())


def _gaps(data: RunData) -> list[str]:
    """Steps the server went away in, and steps whose pg_stat_activity sampling had a gap."""
    out = []
    restarted = [s for s in data.steps if (f := _facts(data, s.step_id).of(Faults)) and f.server_restarted]
    if restarted:
        out.append("the server restarted or could not be reached during step " +
                   ", ".join(f"{s.seq} (c{s.clients} rep {s.rep} {s.variant})" for s in restarted) +
                   "; the step failed and the sweep went on")
    for s in data.steps:
        gaps = _facts(data, s.step_id).of(ActivityGaps)
        if gaps is not None and (lost := gaps.ticks_lost):
            out.append(f"step {s.seq} (c{s.clients} rep {s.rep} {s.variant}): pg_stat_activity sampling lost "
                       f"{lost:.0f} {plural(lost, 'tick')} (its connection was gone); its wait profile "
                       "covers the rest of the step")
    return out + _slowed(data)


def _slowed(data: RunData) -> list[str]:
    """Steps whose pg_stat_activity sampler lengthened its interval by itself (collect.pace)."""
    planned = float(data.run.plan.get("sample_interval_s") or 0.0)
    slowed = []
    for s in data.steps:
        gaps = _facts(data, s.step_id).of(ActivityGaps)
        interval = gaps.interval_s if gaps is not None else None
        if planned and interval and interval > planned * 1.001:
            slowed.append(f"{s.seq} (c{s.clients} rep {s.rep} {s.variant}: {1 / interval:g} Hz)")
    if not slowed:
        return []
    return [f"pg_stat_activity sampling slowed down by itself from {1 / planned:g} Hz in step "
            + ", ".join(slowed) + ": its query took more than half the interval (it reads every backend); "
            "the wait profile's averages hold, from fewer snapshots"]


def _group_warnings(name: str, g: Group) -> list[str]:
    out: list[str] = []
    if g.noisy and g.tps is not None:
        out.append(f"{name}: noisy, TPS varies {g.tps_spread_pct:.0f}% across {g.tps.n} repetitions "
                   f"({g.tps.lo:.0f}..{g.tps.hi:.0f}; threshold {g.noise_pct:g}%)")
    out += _pooler_warnings(name, g.pooler)
    out += _slow_connect(name, g)
    for rep, checks in g.checks:
        out += [f"{name} rep {rep}: {c.id}: {c.detail}" for c in checks if c.status is CheckStatus.WARN]
    return out


def _slow_connect(name: str, g: Group) -> list[str]:
    slow = [s for s in g.done if s.conn_time_ms and s.conn_time_ms / 1000.0 > 0.2 * s.duration_s]
    if not slow:
        return []
    worst = max(slow, key=lambda s: s.conn_time_ms or 0.0)
    window = measured_window(worst.transactions, worst.tps, 0.0)
    after = f"the {window:.1f} s after that" if window else "the time after that"
    return [f"{name}: pgbench took {(worst.conn_time_ms or 0) / 1000:.1f} s to open its {worst.clients} "
            f"connections; TPS counts {after} (as pgbench's own does); the bench-phase samples include "
            "the connecting, and a longer --duration measures more"]


def _pooler_warnings(name: str, p: PoolerRow | None) -> list[str]:
    out = []
    if p is not None and p.missing:
        out.append(f"{name}: pooler figures missing: {p.missing}")
    return out
