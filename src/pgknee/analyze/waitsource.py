"""Two wait sources side by side: pgknee's pg_stat_activity samples and pg_wait_sampling's
in-server profile of the same bench phases. Pure.

Both give AAS per wait event: occurrences / samples (snapshots for the one, the collector's
probes for the other). pg_wait_sampling 1.1 samples only processes with a wait event and does
not know a session's state, so CPU (no wait event) is not in it at all and a Client wait is idle
time as often as not: only the other events compare, and the agreement is judged on them. Each
figure's 1σ sampling error is AAS / sqrt(occurrences); a difference beyond Z combined errors
(each side's from the larger of the two rates) is flagged."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pgknee.model.results import RunData, StepRecord
from pgknee.model.samples import WaitSampling

NOT_COMPARED_TYPES = frozenset({"CPU", "Client"})
Z = 2.0  # a difference beyond 2 combined sigmas is not sampling noise (about 1 event in 20 by chance)


@dataclass(frozen=True)
class SourceRow:
    wait_event_type: str
    wait_event: str
    sampled: float  # pg_stat_activity's AAS
    sampled_err: float
    profile: float | None  # pg_wait_sampling's AAS (None: it has no such figure: CPU)
    profile_err: float
    comparable: bool
    beyond: bool  # the two differ by more than Z combined sampling errors

    @property
    def diff(self) -> float | None:
        return None if self.profile is None else self.sampled - self.profile


@dataclass(frozen=True)
class SourceComparison:
    rows: tuple[SourceRow, ...]
    steps: int
    snapshots: int
    sampled_hz: float
    probes: int
    profile_hz: float
    probes_counted: bool  # every step's probes counted on the reference session (else some assumed)
    sampled_total: float  # comparable events only
    profile_total: float
    total_err: float  # combined 1σ of the difference of the totals
    flagged: tuple[str, ...]  # 'type:event' of the rows beyond the sampling error

    @property
    def total_diff_pct(self) -> float | None:
        return (self.sampled_total / self.profile_total - 1.0) * 100.0 if self.profile_total > 0 else None

    @property
    def agree(self) -> bool:
        return abs(self.sampled_total - self.profile_total) <= Z * self.total_err


def _err(aas: float, count: int) -> float:
    return aas / math.sqrt(count) if count > 0 else 0.0


def pooled_profile(profiles: Sequence[WaitSampling]) -> tuple[dict[tuple[str, str], int], int]:
    """Several steps' profiles as one: counts and probes added (AAS = their ratio)."""
    counts: dict[tuple[str, str], int] = {}
    for p in profiles:
        for t, e, n in p.counts:
            counts[(t, e)] = counts.get((t, e), 0) + n
    return counts, sum(p.probes for p in profiles)


def compare_sources(sampled: Sequence[tuple[str, str, int]], snapshots: int,
                    profiles: Sequence[WaitSampling]) -> SourceComparison | None:
    """pg_stat_activity's counts over `snapshots` against the steps' pg_wait_sampling profiles;
    None when there is no profile or nothing to divide by."""
    counts, probes = pooled_profile(profiles)
    window = sum(p.window_s for p in profiles)
    if not profiles or probes <= 0 or snapshots <= 0 or window <= 0:
        return None
    s_counts = {(t, e): n for t, e, n in sampled}
    rows = [_row(key, s_counts.get(key, 0), snapshots, counts.get(key, 0), probes)
            for key in set(s_counts) | set(counts)]
    rows.sort(key=lambda r: (-max(r.sampled, r.profile or 0.0), r.wait_event_type, r.wait_event))
    comp = [r for r in rows if r.comparable]
    s_n = sum(s_counts.get((r.wait_event_type, r.wait_event), 0) for r in comp)
    p_n = sum(counts.get((r.wait_event_type, r.wait_event), 0) for r in comp)
    s_tot, p_tot = s_n / snapshots, p_n / probes
    return SourceComparison(tuple(rows), len(profiles), snapshots, snapshots / window, probes, probes / window,
                            all(p.probes_counted for p in profiles), s_tot, p_tot,
                            math.hypot(_err(s_tot, s_n), _err(p_tot, p_n)),
                            tuple(f"{r.wait_event_type}:{r.wait_event}" for r in comp if r.beyond))


def _row(key: tuple[str, str], s_n: int, snapshots: int, p_n: int, probes: int) -> SourceRow:
    s_aas, p_aas = s_n / snapshots, p_n / probes
    s_err, p_err = _err(s_aas, s_n), _err(p_aas, p_n)
    comparable = key[0] not in NOT_COMPARED_TYPES
    # the test's errors come from the larger of the two rates (as if both sources saw it): an
    # event one source never caught has no error of its own to compare with
    rate = max(s_aas, p_aas)
    beyond = comparable and abs(s_aas - p_aas) > Z * math.sqrt(rate / snapshots + rate / probes)
    return SourceRow(key[0], key[1], s_aas, s_err, None if key[0] == "CPU" else p_aas, p_err, comparable, beyond)


def group_sources(data: RunData, steps: Sequence[StepRecord]) -> SourceComparison | None:
    """The comparison over a client count's completed steps that have both sources."""
    profiles = {s.step_id: w for s in steps if (w := data.of(s.step_id, WaitSampling)) is not None}
    ids = list(profiles)
    counts: dict[tuple[str, str], int] = {}
    for i in ids:
        for t, e, n in data.waits.get(i, []):
            counts[(t, e)] = counts.get((t, e), 0) + n
    snapshots = sum(data.snaps.get(i, (0, 0.0, 0.0))[0] for i in ids)
    return compare_sources([(t, e, n) for (t, e), n in counts.items()], snapshots,
                           list(profiles.values()))
