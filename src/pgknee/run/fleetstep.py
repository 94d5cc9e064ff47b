"""One phase of a step run by the session's agents (run/distributed.py), from run/step.py."""

from __future__ import annotations

from psycopg.conninfo import make_conninfo

from pgknee.driver.pgbench import PgbenchRun
from pgknee.model.facts import Agents, FactsDraft, Network
from pgknee.run.distributed import AgentLost, Merged, merge
from pgknee.run.schedule import StepSpec
from pgknee.run.session import RunSession
from pgknee.store.coord import Task


def fleet_phase(s: RunSession, spec: StepSpec, run: PgbenchRun, step_id: int, phase: str,
                facts: FactsDraft) -> Merged:
    """One phase of a step run by the session's agents, merged; an agent lost fails the step with
    the reason (and the orchestrator stops the run, or goes on without it: --on-agent-loss)."""
    fleet = s.fleet
    assert fleet is not None
    texts = [sc.path.read_text(encoding="utf-8") for sc in run.scripts]
    dsn = s.target.endpoint.params  # without its password: each agent has its own
    fleet.lost = []
    try:
        tasks = fleet.run(run, texts, step_id, phase, make_conninfo(**dsn), round(spec.variant.think_ms * 1000),
                          on_progress=s.ui.step_progress if phase == "bench" else None)
        lost_reason = None
    except AgentLost as e:
        tasks, lost_reason, fleet.lost = e.tasks, e.message, e.agents
    merged = merge(tasks, s.scripts[spec.variant.name], run)
    if lost_reason is not None:
        merged.reason = lost_reason + (f"; {merged.reason}" if merged.reason else "")
        merged.exit_code = merged.exit_code or 1
    lost = len(fleet.lost) if lost_reason is not None else None
    if (earlier := facts.of(Agents)) is not None and earlier.lost:  # lost in the warm-up: still lost
        lost = (lost or 0) + earlier.lost
    facts.add(Agents(len(tasks), lost))
    facts.add(_network(tasks, facts.of(Network)))
    return merged


def _network(tasks: list[Task], here: Network | None) -> Network | None:
    """The round trip pgbench's connections waited for: the agents' own (each probed its path to
    the server), weighted by their clients, in place of the coordinator's probe from this host
    (the round trips of a transaction stay the scripts')."""
    got = [(t.spec["clients"], t.result) for t in tasks if t.result and t.result.get("rtt_ms") is not None]
    if not got:
        return None
    clients = sum(c for c, _ in got)
    rtt = sum(c * r["rtt_ms"] for c, r in got) / clients
    return Network(here.round_trips_per_txn if here is not None else None, rtt,
                   max(float(r.get("rtt_p99_ms") or r["rtt_ms"]) for _, r in got),
                   min(float(r.get("rtt_min_ms") or r["rtt_ms"]) for _, r in got), rtt)
