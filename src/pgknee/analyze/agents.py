"""A step run by agents, judged: each agent's share (its clients, TPS, CPU, round trip, clock),
whether one of them was the bottleneck (its pgbench's CPU against its threads' capacity, as a
local pgbench is judged), and whether they ran one step together: their measured windows
overlapping, their clocks not too far apart (the store corrects them by the measured offsets;
an offset past the bound says a host's clock drifts, which a window read on it would too)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgknee.analyze.checks import CLIENT_CPU_SATURATED, Check, CheckUnit, _status, _unless
from pgknee.analyze.words import clause
from pgknee.model.keys import CheckId, CheckStatus
from pgknee.model.results import AgentShare, RunData, StepRecord

MIN_OVERLAP = 0.95  # the share of the longest window that every agent's covers
MAX_CLOCK_SPREAD_MS = 1000.0  # agents' offsets to the store's clock this far apart: their clocks disagree


@dataclass(frozen=True)
class AgentRow:
    step: StepRecord
    share: AgentShare
    client_share: float  # its clients of the step's
    tps_share: float | None  # its TPS of the agents' sum
    capacity_pct: float | None  # its pgbench's CPU against min(threads, CPUs) cores


def agent_rows(data: RunData) -> list[AgentRow]:
    out = []
    for step in data.steps:
        shares = data.agents.get(step.step_id, [])
        total = sum(a.tps or 0.0 for a in shares)
        for a in shares:
            out.append(AgentRow(step, a, a.clients / step.clients if step.clients else 0.0,
                                (a.tps or 0.0) / total if total > 0 else None, capacity_pct(a)))
    return out


def capacity_pct(a: AgentShare) -> float | None:
    cores = min(a.threads, a.cpus) if a.cpus else a.threads
    return None if a.cpu_pct is None or cores <= 0 else a.cpu_pct / cores


def agents_cpu(step: StepRecord, shares: Sequence[AgentShare]) -> Check:
    """client-cpu for a step run by agents: the busiest agent's pgbench against its capacity."""
    judged = [(a, c) for a in shares if (c := capacity_pct(a)) is not None]
    if not judged:
        return Check(CheckId.CLIENT_CPU, CheckStatus.NA, "no agent reported its CPU")
    busiest, cap = max(judged, key=lambda x: x[1])
    ok = cap <= CLIENT_CPU_SATURATED
    return Check(CheckId.CLIENT_CPU, _status(ok),
                 f"agent {busiest.agent}'s pgbench used {busiest.cpu_pct:.0f}% CPU over {busiest.threads} thread(s) "
                 f"({cap:.0f}% of their capacity), the busiest of {len(shares)} agents"
                 + _unless(ok, f"; agent {busiest.agent} may be the bottleneck: use more agents or more CPUs"),
                 cap, CheckUnit.CAPACITY_PCT)


def overlap(shares: Sequence[AgentShare]) -> float | None:
    """The share of the longest window that all the agents' windows cover together."""
    wins = [(a.bench_start, a.bench_end) for a in shares if a.bench_start is not None and a.bench_end is not None]
    if len(wins) < 2:
        return None
    longest = max(e - s for s, e in wins)
    common = min(e for _, e in wins) - max(s for s, _ in wins)
    return max(0.0, common) / longest if longest > 0 else None


def agents_agree(step: StepRecord, shares: Sequence[AgentShare]) -> Check:
    """The agents ran one step: their windows overlap, their clocks agree."""
    if len(shares) < 2:
        return Check(CheckId.AGENTS_AGREE, CheckStatus.NA, "one agent ran the step")
    o = overlap(shares)
    offsets = [a.clock_offset_ms for a in shares if a.clock_offset_ms is not None]
    spread = max(offsets) - min(offsets) if offsets else 0.0
    problems = []
    if o is not None and o < MIN_OVERLAP:
        problems.append(f"their windows overlap over {o:.0%} of the longest only (under {MIN_OVERLAP:.0%}): the "
                        "summed TPS counts load that did not run at once")
    if spread > MAX_CLOCK_SPREAD_MS:
        problems.append(f"their clocks are {spread:.0f} ms apart (corrected by the offsets measured to the store's "
                        "clock; run NTP on the load generators)")
    detail = f"{len(shares)} agents{clause(', windows overlapping {:.1%}', o)}, clocks within {spread:.1f} ms"
    return Check(CheckId.AGENTS_AGREE, _status(not problems), "; ".join(problems) or detail,
                 o * 100 if o is not None else None, CheckUnit.CAPACITY_PCT)


def agent_warnings(data: RunData) -> list[str]:
    """The run's warnings about its agents: one saturated, windows apart, clocks apart, a share
    far from its clients' share."""
    out = []
    for step in data.steps:
        shares = data.agents.get(step.step_id, [])
        if not shares or step.status != "completed":
            continue
        label = f"c{step.clients} rep {step.rep}"
        cpu = agents_cpu(step, shares)
        if cpu.status == CheckStatus.WARN:
            out.append(f"{label}: {cpu.detail}")
        agree = agents_agree(step, shares)
        if agree.status == CheckStatus.WARN:
            out.append(f"{label}: the agents disagree: {agree.detail}")
    return out
