"""How many pgbouncer processes a load needs, from a sweep of them
(--variant 'pooled:transaction:pool=8:processes=1,2,4'): the variants that differ only in their
processes are read together at the largest client count they all measured. The answer is the
fewest processes that reach the run's fraction (95%) of the best throughput with none of their
processes near a full core (the pooler-bound check); plausible noise (noise_draws, the same rule
on the curve moved by the run's noise) gives its interval, as for a count of connections. Pure."""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Mapping, Sequence

from pgknee.analyze.answer import Recommendation
from pgknee.analyze.curve import copies, middle
from pgknee.analyze.noise import measure
from pgknee.analyze.view import Group, RunView
from pgknee.analyze.words import clause, plural
from pgknee.model.keys import CheckId, CheckStatus

_PROCESSES = re.compile(r"(^|:)\s*processes\s*=\s*(\d+)\s*(?=:|$)")
_POOL = re.compile(r"(^|:)\s*pool\s*=\s*(\d+)\s*(?=:|$)")


def families(view: RunView) -> dict[str, list[tuple[int, str]]]:
    """Managed pooled variants that differ only in their processes (each with the same pool, so
    with more server connections the more processes), or in their processes and pool with the same
    server connections in all (pool=16:processes=1 beside pool=8:processes=2): two or more of
    them. The family's name → (processes, variant), fewest first. A spec without processes= is
    the one-process member."""
    out: dict[str, list[tuple[int, int, str]]] = {}
    for v in view.variants():
        g = next((g for g in view.groups if g.variant == v), None)
        if g is None or g.steps[0].pooler_kind != "managed" or g.steps[0].pool_size is None:
            continue
        s = g.steps[0]
        key = _PROCESSES.sub(r"\1processes=*", v) if _PROCESSES.search(v) else f"{v}:processes=*"
        out.setdefault(_POOL.sub(r"\1pool=#", key), []).append((s.pool_processes, s.pool_size or 0, v))
    named = {}
    for key, members in out.items():
        members.sort()
        if len(members) < 2 or len({n for n, _, _ in members}) < len(members):
            continue
        counts = ",".join(str(n) for n, _, _ in members)
        if len({p for _, p, _ in members}) == 1:
            named[key.replace("#", str(members[0][1])).replace("*", counts)] = [(n, v) for n, _, v in members]
        elif len({n * p for n, p, _ in members}) == 1:  # the same server connections in all
            total = members[0][0] * members[0][1]
            named[key.replace("pool=#", f"pool×processes={total}").replace("*", counts)] = \
                [(n, v) for n, _, v in members]
    return named


def busiest_cpu(g: Group) -> float | None:
    """The busiest pooler process's mean CPU (% of a core) at a client count: the pooler-bound
    check's figure, the largest over the repetitions."""
    values = [c.value for _rep, cs in g.checks for c in cs
              if c.id is CheckId.POOLER_BOUND and c.status is not CheckStatus.NA and c.value is not None]
    return max(values, default=None)


def pooler_bound(groups: Sequence[Group]) -> tuple[int, str] | None:
    """The smallest client count at which a pooler process neared a full core, and what to say."""
    for g in sorted(groups, key=lambda g: g.clients):
        warned = [c for _rep, cs in g.checks for c in cs
                  if c.id is CheckId.POOLER_BOUND and c.status is CheckStatus.WARN]
        worst = max(warned, key=lambda c: c.value or 0.0, default=None)
        if worst is not None:
            said = worst.detail.split(": the step shows")[0]
            more = "give it more CPU" if said.startswith("pgpool") else "add a process (processes=N)"
            return g.clients, (f"{said} from c{g.clients}: {more} or measure without it; "
                               f"the counts from {g.clients} on show the pooler's ceiling and are not read as the "
                               "server's limit")
    return None


def _bound(g: Group) -> bool:
    return any(c.id is CheckId.POOLER_BOUND and c.status is CheckStatus.WARN for _rep, cs in g.checks for c in cs)


def recommend_processes(view: RunView, family: str, members: Sequence[tuple[int, str]], template: Recommendation
                        ) -> Recommendation | None:
    """The fewest processes reaching the fraction of the best at the largest client count every
    member measured, none of them pooler-bound; None when they share no count."""
    groups = {v: {g.clients: g for g in view.groups if g.variant == v and g.tps is not None} for _, v in members}
    common = set.intersection(*(set(gs) for gs in groups.values()))
    if not common:
        return None
    clients = max(common)
    at = {n: groups[v][clients] for n, v in members}
    by_n = {n: [float(s.tps) for s in g.done if s.tps] for n, g in at.items()}
    if not all(by_n.values()):
        return None
    bound = {n for n, g in at.items() if _bound(g)}
    noise = measure(by_n, None, max(g.noise_pct for g in at.values()))
    # the same pool in each process: more processes, more server connections, and throughput that
    # says as much about those as about the processes; only the pooler's cores can answer then
    pools = {n: g.steps[0].pool_size or 0 for n, g in at.items()}
    same_connections = len({n * p for n, p in pools.items()}) == 1

    def rule(d: Mapping[int, Sequence[float]]) -> int | None:
        best = max(statistics.median(x) for x in d.values())
        return next((n for n in sorted(d) if n not in bound and (
            not same_connections or statistics.median(d[n]) >= template.fraction * best)), None)

    best_n = max(by_n, key=lambda n: statistics.median(by_n[n]))
    base = dataclasses.replace(template, variant=f"{family} at {clients} clients", concurrency="pooler processes",
                               measured=tuple(sorted(by_n)), family=True, fit=None, knee=None, checks={},
                               repetitions=min(len(x) for x in by_n.values()),
                               reasons=_reasons(at, clients, bound) + (() if same_connections else _confounded(pools)),
                               connections=None, modelled_n=None, counts_interval=None,
                               level_tps=statistics.median(by_n[best_n]), measured_best=best_n, saturated=(),
                               next_counts=(), pooler_bound="")
    chosen = rule(by_n)
    if chosen is None:
        return dataclasses.replace(base, verdict="not-identified", next_counts=(2 * max(by_n),))
    span = middle([c for d in copies(by_n, noise) if (c := rule(d)) is not None]) or (chosen, chosen)
    if not same_connections:  # not read against the best throughput (the reasons say why)
        base = dataclasses.replace(base, level_tps=None, measured_best=None)
    return dataclasses.replace(base, verdict="levels-off", connections=chosen,
                               counts_interval=(min(span[0], chosen), max(span[1], chosen)))


def _confounded(pools: Mapping[int, int]) -> tuple[str, ...]:
    each = "; ".join(f"{n} × pool {p} = {n * p}" for n, p in sorted(pools.items()))
    n = max(pools)
    return (f"each process has its own pool, so the server connections differ ({each}): the throughput "
            "differences are theirs as much as the processes', and only the processes' cores answered; to weigh "
            f"processes alone, keep processes × pool the same (e.g. pool={n * pools[n]}:processes=1 beside "
            f"pool={pools[n]}:processes={n})",)


def _reasons(at: Mapping[int, Group], clients: int, bound: set[int]) -> tuple[str, ...]:
    rows = []
    for n, g in sorted(at.items()):
        if g.tps is None:
            continue
        cpu = busiest_cpu(g)
        rows.append(f"{n} {plural(n, 'process', 'es')}: {g.tps.value:,.0f} TPS"
                    + clause(", the busiest at {:.0f}% of a core", cpu)
                    + (" (pooler-bound)" if n in bound else ""))
    return (f"at {clients} clients through pgbouncer, by processes: " + "; ".join(rows),)
