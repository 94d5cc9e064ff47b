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
from pgknee.analyze.records import Group, RunView
from pgknee.analyze.saturation import count_interval, noise_draws
from pgknee.keys import CheckId, CheckStatus

_PROCESSES = re.compile(r"(^|:)\s*processes\s*=\s*(\d+)\s*(?=:|$)")


def families(view: RunView) -> dict[str, list[tuple[int, str]]]:
    """Managed pooled variants that differ only in their processes, two or more of them: the
    family's name (the spec with its process counts listed) → (processes, variant), fewest first.
    A variant of the same spec without processes= is the one-process member."""
    out: dict[str, list[tuple[int, str]]] = {}
    for v in view.variants():
        g = next((g for g in view.groups if g.variant == v), None)
        if g is None or g.steps[0].pooler_kind != "managed":
            continue
        m = _PROCESSES.search(v)
        key = v[:m.start(2)] + "*" + v[m.end(2):] if m else f"{v}:processes=*"
        out.setdefault(key, []).append((g.steps[0].pool_processes, v))
    named = {}
    for key, members in out.items():
        if len(members) >= 2 and len({n for n, _ in members}) == len(members):
            members.sort()
            named[key.replace("*", ",".join(str(n) for n, _ in members))] = members
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
            return g.clients, (f"{said} from c{g.clients}: add a process (processes=N) or measure without it; "
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
    noise = max(g.noise_pct for g in at.values())

    def rule(d: Mapping[int, Sequence[float]]) -> int | None:
        best = max(statistics.median(x) for x in d.values())
        return next((n for n in sorted(d) if n not in bound and statistics.median(d[n]) >= template.fraction * best),
                    None)

    best_n = max(by_n, key=lambda n: statistics.median(by_n[n]))
    base = dataclasses.replace(template, variant=f"{family} at {clients} clients", concurrency="pooler processes",
                               measured=tuple(sorted(by_n)), family=True, fit=None, knee=None, checks={},
                               repetitions=min(len(x) for x in by_n.values()), reasons=_reasons(at, clients, bound),
                               connections=None, interval=None, modelled_n=None, counts_interval=None,
                               level_tps=statistics.median(by_n[best_n]), measured_best=best_n, saturated=(),
                               next_counts=(), pooler_bound="")
    chosen = rule(by_n)
    if chosen is None:
        return dataclasses.replace(base, verdict="not-identified", next_counts=(2 * max(by_n),))
    span = count_interval([rule(d) for d in noise_draws(by_n, noise)]) or (chosen, chosen)
    return dataclasses.replace(base, verdict="levels-off", connections=chosen,
                               counts_interval=(min(span[0], chosen), max(span[1], chosen)))


def _reasons(at: Mapping[int, Group], clients: int, bound: set[int]) -> tuple[str, ...]:
    rows = []
    for n, g in sorted(at.items()):
        if g.tps is None:
            continue
        cpu = busiest_cpu(g)
        rows.append(f"{n} process{'es' if n > 1 else ''}: {g.tps.value:,.0f} TPS"
                    + (f", the busiest at {cpu:.0f}% of a core" if cpu is not None else "")
                    + (" (pooler-bound)" if n in bound else ""))
    return (f"at {clients} clients through pgbouncer, by processes: " + "; ".join(rows),)
