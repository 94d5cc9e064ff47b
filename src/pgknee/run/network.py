"""A step's network: the round trip its pgbench waits for, probed before the step on the path
pgbench takes (direct, and through the relay when the variant simulates a hop with rtt=), and
the round trips its transaction makes (counted from the variant's scripts). Facts of the step
(keys.StepFact.NET_*); the relay is stopped when the step's stack closes.

The hop goes where the application's would: between pgbench and the endpoint it connects to,
the server or the step's pgbouncer (pgbouncer beside the server, the network in front)."""

from __future__ import annotations

import contextlib
import shutil

from pgknee import safefs
from pgknee.driver.roundtrips import per_transaction
from pgknee.keys import StepFact
from pgknee.netsim.control import Relay, RttProbe, try_probe, upstream_is_unix
from pgknee.pooler.lab import StepPooler
from pgknee.run.schedule import StepSpec
from pgknee.run.scripts import script_texts
from pgknee.run.session import RunSession
from pgknee.targets.base import Endpoint


def _probe_facts(p: RttProbe | None) -> dict[str, float]:
    if p is None:
        return {}
    return {StepFact.NET_RTT_MS: p.median_ms, StepFact.NET_RTT_P99_MS: p.p99_ms, StepFact.NET_RTT_MIN_MS: p.min_ms}


def _relay_facts(relay: Relay, facts: dict[str, float]) -> None:
    if relay.process is not None and (code := relay.process.poll()) is not None:
        # killed, or crashed: the step's reason says so (Popen gives a signal as its negative)
        facts[StepFact.NET_RELAY_SIGNAL if code < 0 else StepFact.NET_RELAY_EXIT_CODE] = float(abs(code))
    said = relay.finish()
    for key, fact in (("late_mean_ms", StepFact.NET_RELAY_LATE_MEAN_MS),
                      ("late_p99_ms", StepFact.NET_RELAY_LATE_P99_MS), ("cpu_pct", StepFact.NET_RELAY_CPU_PCT)):
        if key in said:
            facts[fact] = said[key]


def step_network(stack: contextlib.ExitStack, s: RunSession, spec: StepSpec, pooled: StepPooler | None,
                 facts: dict[str, float]) -> Endpoint | None:
    """Probe the step's round trip; start its relay if its variant has rtt= (returns the endpoint
    pgbench reaches it by, else None: pgbench connects as it would)."""
    v = spec.variant
    upstream = pooled.endpoint if pooled is not None else s.target.endpoint
    texts = script_texts(s.prepared.workload, v)
    facts[StepFact.NET_ROUND_TRIPS] = per_transaction([(text, src.weight) for src, text in texts])
    direct = try_probe(upstream)
    if not v.rtt_ms:
        facts.update(_probe_facts(direct))
        return None
    socket_dir = (safefs.private_dir("relay-", base=str(s.work_dir), reachable_by=s.target.run_as, record=False)
                  if upstream_is_unix(upstream) else None)
    if socket_dir is not None:
        stack.callback(shutil.rmtree, socket_dir, ignore_errors=True)  # after the relay stopped
    relay = stack.enter_context(Relay(upstream, v.rtt_ms, v.rtt_jitter_ms, connections=spec.clients,
                                      socket_dir=socket_dir, owner=s.target.run_as))
    stack.callback(_relay_facts, relay, facts)  # before the relay's close: at the step's end
    through = try_probe(relay.endpoint, expected_ms=v.rtt_ms)
    facts.update(_probe_facts(through))
    if direct is not None and through is not None:
        facts[StepFact.NET_DIRECT_RTT_MS] = direct.median_ms
        facts[StepFact.NET_RELAY_ADDED_MS] = through.median_ms - direct.median_ms
    return relay.endpoint
