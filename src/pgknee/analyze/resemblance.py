"""Did the replay resemble the capture? Each replayed statement's share of calls and of time
among the replayed statements (pg_stat_statements on the target, per step, summed over the
steps chosen), against the same shares on the source. Pure.

Tolerances: a share of calls is set by the scripts' weights (pgbench picks a script per
transaction at random: over thousands of transactions its sampling error is well under a point),
so more than 5 points off means the weights or the scripts are wrong. A share of time also depends
on the target's machine, cache and the step's concurrency (lock waits grow with clients), which
is what the sweep measures: 10 points, and a miss is a finding to read, not an error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgknee.model.results import CapturedStatement, ReplayedStatement

CALLS_TOL = 0.05
TIME_TOL = 0.10


@dataclass(frozen=True)
class MixRow:
    id: str
    query: str
    captured_calls: float
    captured_time: float
    replayed_calls: float
    replayed_time: float
    within: bool


@dataclass(frozen=True)
class Resemblance:
    rows: tuple[MixRow, ...]
    calls_tol: float
    time_tol: float
    note: str

    @property
    def ok(self) -> bool:
        return all(r.within for r in self.rows)


def resemblance(captured: Sequence[CapturedStatement], replayed: Sequence[ReplayedStatement],
                steps: Sequence[int] | None = None) -> Resemblance | None:
    """The source's statements against what `steps` (all when None) replayed of them."""
    if not captured:
        return None
    calls: dict[str, float] = {}
    times: dict[str, float] = {}
    seen = set()
    for step_id, sid, c, t in replayed:
        if steps is None or step_id in steps:
            seen.add(step_id)
            calls[sid] = calls.get(sid, 0.0) + float(c)
            times[sid] = times.get(sid, 0.0) + float(t)
    cap_calls = sum(float(r.share_calls) for r in captured) or 1.0
    cap_time = sum(float(r.share_time) for r in captured) or 1.0
    all_calls, all_time = sum(calls.values()) or 1.0, sum(times.values()) or 1.0
    rows = []
    for sid, query, _kind, sc, st in captured:
        cc, ct = float(sc) / cap_calls, float(st) / cap_time
        rc, rt = calls.get(sid, 0.0) / all_calls, times.get(sid, 0.0) / all_time
        rows.append(MixRow(sid, query, cc, ct, rc, rt, abs(rc - cc) <= CALLS_TOL and abs(rt - ct) <= TIME_TOL))
    note = (f"over {len(seen)} step(s); " if seen else "no step measured its statements (pg_stat_statements "
                                                         "missing on the target?); ") + \
        "statements found on the target by their parse tree's fingerprint"
    return Resemblance(tuple(rows), CALLS_TOL, TIME_TOL, note)
