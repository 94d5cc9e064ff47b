"""The network in each transaction, and what pipeline mode recovers. Pure.

A client waits one round trip per statement it sends (per pipeline, in pipeline mode): the
network's part of a transaction is round trips x RTT (the probed median on pgbench's path,
step facts net.*), and its share of the measured mean latency is what fewer round trips can
win back. Two checks: 'network-bound' (the network is most of each transaction, and it
explains the time the server's sessions wait for their client) beside 'client-cpu' (pgbench
out of CPU: client saturated), and 'rtt-achieved' (the relay gave the asked round trip)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgknee.analyze.checks import Check, CheckUnit, _status, _unless
from pgknee.analyze.view import Group, RunView
from pgknee.analyze.waits import total_aas
from pgknee.analyze.words import clause
from pgknee.model.facts import Network, RelayEnd, StepFacts
from pgknee.model.keys import CheckId, CheckStatus
from pgknee.model.results import StepRecord, WaitRow

if TYPE_CHECKING:
    from pgknee.analyze.compare import Ratio

NETWORK_BOUND_SHARE = 50.0  # % of a transaction's mean latency spent on round trips
RTT_TOLERANCE = 20.0  # % between the asked round trip and what the relay added


@dataclass(frozen=True)
class NetworkRow:
    """One variant at one client count (medians over its completed repetitions)."""

    variant: str
    clients: int
    asked_ms: float  # rtt= (0: no simulated hop)
    rtt_ms: float | None  # the probed median on pgbench's path
    rtt_p99_ms: float | None
    relay_added_ms: float | None  # through the relay less direct: the asked delay + the relay's own cost
    round_trips: float | None  # per transaction
    latency_ms: float | None  # measured mean

    @property
    def network_ms(self) -> float | None:
        return self.round_trips * self.rtt_ms if self.round_trips is not None and self.rtt_ms is not None else None

    @property
    def share_pct(self) -> float | None:
        n = self.network_ms
        return 100.0 * n / self.latency_ms if n is not None and self.latency_ms else None


def network_row(g: Group, facts: dict[int, StepFacts]) -> NetworkRow | None:
    steps = g.done or g.steps
    nets = [n for s in steps if (n := facts.get(s.step_id, StepFacts()).of(Network)) is not None]

    def med(figure: Callable[[Network], float | None]) -> float | None:
        vals = [v for n in nets if (v := figure(n)) is not None]
        return float(statistics.median(vals)) if vals else None

    rtt = med(lambda n: n.rtt_ms)
    if rtt is None:
        return None
    return NetworkRow(g.variant, g.clients, steps[0].rtt_ms, rtt, med(lambda n: n.rtt_p99_ms),
                      med(lambda n: n.relay_added_ms), med(lambda n: n.round_trips_per_txn),
                      g.lat_avg.value if g.lat_avg else None)


def network_rows(view: RunView) -> list[NetworkRow]:
    """Per variant and client count, in the order swept; none for a run stored without probes."""
    return [r for g in view.groups if (r := network_row(g, view.data.facts)) is not None]


@dataclass(frozen=True)
class PipelineGain:
    """Pipeline mode against the same variant without it, at one round-trip time and client count."""

    rtt_ms: float
    clients: int
    normal: str
    pipeline: str
    ratio: Ratio


def _twin_key(v: dict[str, Any]) -> tuple[Any, ...]:
    """A variant's description without its name and pipeline mode: twins differ only there."""
    return tuple(sorted((k, repr(x)) for k, x in v.items() if k not in ("name", "pipeline")))


def pipeline_gains(view: RunView) -> list[PipelineGain]:
    """For each variant in pipeline mode whose twin without it ran too: the TPS ratio (paired
    repetitions), per client count, ordered by round-trip time."""
    from pgknee.analyze.compare import paired_ratio  # scipy: only where gains are asked for

    planned = view.data.run.plan.get("variants") or []
    normal = {_twin_key(v): v["name"] for v in planned if not v.get("pipeline")}
    by = {(g.variant, g.clients): g for g in view.groups}
    out = []
    for v in planned:
        twin = normal.get(_twin_key(v)) if v.get("pipeline") else None
        if twin is None:
            continue
        for g in view.groups:
            base = by.get((twin, g.clients))
            if g.variant == v["name"] and base is not None and (r := paired_ratio(base.done, g.done)) is not None:
                out.append(PipelineGain(float(v.get("rtt_ms") or 0.0), g.clients, twin, g.variant, r))
    return sorted(out, key=lambda p: (p.clients, p.rtt_ms))


def gain_headline(gains: Sequence[PipelineGain]) -> list[str]:
    """'pipeline gain by round trip at 4 clients: 0 ms x1.62, 1 ms x3.10, 5 ms x4.80' when the
    run has pipeline twins at more than one round-trip time."""
    if len({g.rtt_ms for g in gains}) < 2:
        return []
    out = []
    for clients in dict.fromkeys(g.clients for g in gains):
        parts = [f"{g.rtt_ms:g} ms x{g.ratio.value:.2f}" + (f" [{g.ratio.lo:.2f}..{g.ratio.hi:.2f}]"
                                                            if g.ratio.lo is not None and g.ratio.hi is not None
                                                            else "")
                 for g in gains if g.clients == clients]
        out.append(f"pipeline gain by simulated round trip at {clients} clients: {', '.join(parts)} "
                   "(TPS against the same variant without pipeline mode)")
    return out


def _na(check: CheckId, why: str) -> Check:
    return Check(check, CheckStatus.NA, why)


def network_bound(step: StepRecord, net: Network, client_wait: float | None) -> Check:
    """Round trips x RTT against the measured mean latency; and, where the sampled sessions tell
    it, the sessions waiting for their client against the network's share of them (Little's law:
    TPS x round trips x RTT)."""
    name = CheckId.NETWORK_BOUND
    rtt, trips = net.rtt_ms, net.round_trips_per_txn
    if rtt is None or trips is None:
        return _na(name, "no round-trip probe")
    if not step.tps or not step.lat_avg_ms:
        return _na(name, "no measured latency")
    net_ms = trips * rtt
    share = 100.0 * net_ms / step.lat_avg_ms
    detail = (f"{trips:.2f} round trips x {rtt:.3f} ms = {net_ms:.3f} ms of each {step.lat_avg_ms:.3f} ms "
              f"transaction on the network ({share:.0f}%)")
    if client_wait is not None:
        explained = step.tps * net_ms / 1000.0
        detail += (f"; sessions waiting for their client {client_wait:.2f}, of which the network explains "
                   f"{explained:.2f}")
    if share >= NETWORK_BOUND_SHARE:
        fewer = "pipeline mode" if not step.pipeline else "fewer pipelines per transaction"
        detail += f"; network-bound: fewer round trips ({fewer}) or a nearer client would raise TPS"
    return Check(name, CheckStatus.WARN if share >= NETWORK_BOUND_SHARE else CheckStatus.OK, detail, share,
                 CheckUnit.CAPACITY_PCT)


def rtt_achieved(step: StepRecord, net: Network, relay: RelayEnd | None) -> Check:
    """The simulated hop's round trip (probed through the relay, less the direct path) against
    the asked one; the relay's own cost (about 0.05 ms, measured with rtt 0) is within it."""
    name = CheckId.RTT_ACHIEVED
    if not step.rtt_ms:
        return _na(name, "no simulated network hop")
    added = net.relay_added_ms
    if added is None:
        return _na(name, "the round trip through the relay was not probed")
    d = 100.0 * (added - step.rtt_ms) / step.rtt_ms
    detail = f"asked {step.rtt_ms:g} ms, the relay added {added:.3f} ms before the step ({d:+.1f}%)"
    # during the step: each round trip crosses the relay twice, each crossing late by this on average
    late = relay.late_mean_ms if relay is not None else None
    late_pct = 100.0 * 2 * late / step.rtt_ms if late is not None else 0.0
    if relay is not None and late is not None:  # (late is only known from a relay)
        detail += (f"; during it {2 * late:.3f} ms late per round trip ({late_pct:+.1f}%)"
                   + clause(", the relay at {:.0f}% of a core", relay.cpu_pct))
    ok = abs(d) <= RTT_TOLERANCE and late_pct <= RTT_TOLERANCE
    worst = max(d, late_pct, key=abs)
    return Check(name, _status(ok),
                 detail + _unless(ok, "; the machine is too busy for the relay to keep time"), worst,
                 CheckUnit.DEVIATION_PCT)


def network_checks(step: StepRecord, facts: StepFacts, snaps: tuple[int, float, float] | None,
                   rows: Sequence[WaitRow]) -> list[Check]:
    """A step's network checks, when its round trip was probed (none for older runs)."""
    net = facts.of(Network)
    if net is None or net.rtt_ms is None:
        return []
    # sessions waiting for their client: the client backends sampled, less those active
    direct = step.pooler_kind is None
    client_wait = max(0.0, snaps[1] - total_aas(rows)) if snaps is not None and snaps[0] and direct else None
    out = [network_bound(step, net, client_wait)]
    if step.rtt_ms:
        out.append(rtt_achieved(step, net, facts.of(RelayEnd)))
    return out


def network_reasons(groups: Sequence[Group]) -> list[str]:
    """The first client count whose steps were network-bound, in words, for the recommendation's
    reasons. Unlike a saturated client (client-cpu), which withholds the answer, a network hop is
    part of the deployment being sized: more connections hide its latency, and the answer holds."""
    for g in groups:
        for _rep, checks in g.checks:
            for c in checks:
                if c.id is CheckId.NETWORK_BOUND and c.status is CheckStatus.WARN:
                    why = c.detail.split("; network-bound")[0]
                    return [f"at c{g.clients} most of each transaction was the network: {why}; the answer holds "
                            "for a client this far from the server (pipeline mode or a nearer client would "
                            "raise TPS)"]
    return []
