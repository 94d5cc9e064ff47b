"""A step's network: the round trip its pgbench waits for, probed before the step on the path
pgbench takes (direct, and through the relay when the variant simulates a hop with rtt=), and
the round trips its transaction makes (counted from the variant's scripts): the step's Network
record, and its relay's own at its end (pgknee.model.facts); the relay is stopped when the step's
stack closes.

The hop goes where the application's would: between pgbench and the endpoint it connects to,
the server or the step's pgbouncer (pgbouncer beside the server, the network in front)."""

from __future__ import annotations

import contextlib
import shutil

from pgknee.driver.roundtrips import per_transaction
from pgknee.model.facts import FactsDraft, Network, RelayEnd
from pgknee.netsim.control import Relay, RttProbe, try_probe, upstream_is_unix
from pgknee.pooler.lab import StepPooler
from pgknee.run.schedule import StepSpec
from pgknee.run.scripts import script_texts
from pgknee.run.session import RunSession
from pgknee.system import safefs
from pgknee.targets.base import Endpoint


def _network(round_trips: float, p: RttProbe | None, direct: RttProbe | None = None) -> Network:
    """The step's network: `p` probed on pgbench's path, `direct` without the relay."""
    if p is None:
        return Network(round_trips)
    if direct is None:
        return Network(round_trips, p.median_ms, p.p99_ms, p.min_ms)
    return Network(round_trips, p.median_ms, p.p99_ms, p.min_ms, direct.median_ms, p.median_ms - direct.median_ms)


def _relay_end(relay: Relay, facts: FactsDraft) -> None:
    code = relay.process.poll() if relay.process is not None else None
    said = relay.finish()
    if code is None and not said:
        return
    # killed, or crashed: the step's reason says so (Popen gives a signal as its negative)
    facts.add(RelayEnd(said.get("late_mean_ms"), said.get("late_p99_ms"), said.get("cpu_pct"),
                       code if code is not None and code >= 0 else None,
                       -code if code is not None and code < 0 else None))


def step_network(stack: contextlib.ExitStack, s: RunSession, spec: StepSpec, pooled: StepPooler | None,
                 facts: FactsDraft) -> Endpoint | None:
    """Probe the step's round trip; start its relay if its variant has rtt= (returns the endpoint
    pgbench reaches it by, else None: pgbench connects as it would)."""
    v = spec.variant
    upstream = pooled.endpoint if pooled is not None else s.target.endpoint
    texts = script_texts(s.prepared.workload, v)
    trips = per_transaction([(text, src.weight) for src, text in texts])
    direct = try_probe(upstream)
    if not v.rtt_ms:
        facts.add(_network(trips, direct))
        return None
    socket_dir = (safefs.private_dir("relay-", base=str(s.work_dir), reachable_by=s.target.run_as, record=False)
                  if upstream_is_unix(upstream) else None)
    if socket_dir is not None:
        stack.callback(shutil.rmtree, socket_dir, ignore_errors=True)  # after the relay stopped
    relay = stack.enter_context(Relay(upstream, v.rtt_ms, v.rtt_jitter_ms, connections=spec.clients,
                                      socket_dir=socket_dir, owner=s.target.run_as))
    stack.callback(_relay_end, relay, facts)  # before the relay's close: at the step's end
    facts.add(_network(trips, try_probe(relay.endpoint, expected_ms=v.rtt_ms), direct))
    return relay.endpoint
