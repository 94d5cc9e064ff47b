"""Average Active Sessions from pg_stat_activity snapshots. Pure.

AAS of an event = (occurrences over ALL snapshots of the window) / (number of
snapshots), empty snapshots included, so per-event AAS adds up to the total.
The article's query divides by the snapshots in which the event appeared,
which overstates AAS for rare events; `article_aas` reproduces it for reference."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pgknee.model.results import WaitRow


@dataclass(frozen=True)
class WaitProfile:
    """A wait table's content: the AAS of each event with its 1σ sampling error, the total over
    the client backends, and background processes apart (not in the total)."""

    snapshots: int
    rows: tuple[WaitRow, ...]
    errors: tuple[float, ...]  # of each row's AAS
    total_aas: float
    background: tuple[WaitRow, ...] = ()
    background_errors: tuple[float, ...] = ()
    hidden: float | None = None  # backends per snapshot the sampling role could not see


@dataclass(frozen=True)
class WaitStack:
    """Wait events across client counts, as a stacked chart shows them: the events with the
    largest AAS over all the counts, each one's AAS per count, and the other events' per count."""

    events: tuple[tuple[str, str], ...]  # (type, event), largest first
    aas: tuple[tuple[float, ...], ...]  # per event, per count
    rest: tuple[float, ...]  # per count


def stack(per_count: Sequence[Sequence[WaitRow]], top: int) -> WaitStack:
    totals: dict[tuple[str, str], float] = {}
    for rows in per_count:
        for w in rows:
            totals[(w.wait_event_type, w.wait_event)] = totals.get((w.wait_event_type, w.wait_event), 0.0) + w.aas
    events = sorted(totals, key=lambda k: -totals[k])[:top]
    aas = tuple(tuple(sum(w.aas for w in rows if (w.wait_event_type, w.wait_event) == event) for rows in per_count)
                for event in events)
    rest = tuple(sum(w.aas for w in rows if (w.wait_event_type, w.wait_event) not in events) for rows in per_count)
    return WaitStack(tuple(events), aas, rest)


def profile_of(rows: Sequence[WaitRow], snapshots: int, background: Sequence[WaitRow] = (),
               hidden: float | None = None) -> WaitProfile:
    return WaitProfile(snapshots, tuple(rows), tuple(r.aas * relative_error(r) for r in rows), total_aas(rows),
                       tuple(background), tuple(r.aas * relative_error(r) for r in background), hidden or None)


def wait_profile(counts: Sequence[tuple[str, str, int]], snapshots: int) -> list[WaitRow]:
    if snapshots <= 0:
        return []
    rows = [WaitRow(t, e, n, n / snapshots) for t, e, n in counts]
    return sorted(rows, key=lambda r: (-r.count, r.wait_event_type, r.wait_event))


def total_aas(rows: Sequence[WaitRow]) -> float:
    return sum(r.aas for r in rows)


def sampled_aas(rows: Sequence[WaitRow], snapshots: int) -> float | None:
    """The average active sessions of a wait profile, None when no snapshot was taken (not 0)."""
    return total_aas(rows) if snapshots else None


def relative_error(row: WaitRow) -> float:
    """One-sigma relative sampling error of an AAS figure: ~ 1/sqrt(occurrences)."""
    return 1.0 / math.sqrt(row.count) if row.count else math.inf


def article_aas(occurrences: int, snapshots_where_seen: int) -> float:
    """The article's formula (000, section 7): biased upwards, kept only for comparison."""
    return occurrences / snapshots_where_seen if snapshots_where_seen else 0.0
