"""Did the replay hold its connections as the application did? For each step of a replay of a
workload captured with --observe: how long a transaction held its connection, the share of that
spent idle inside it, and the statements per transaction, against the application's own (pure).

Measured the same way on both sides, from the server's counters: the hold of a transaction is
(active_time + idle_in_transaction_time) / transactions (pg_stat_database's change over the
bench phase; the transactions pgbench's), its idle share idle_in_transaction_time over that, its
statements the replayed statements' calls (pg_stat_statements on the target) per transaction.

Tolerances: 15% for the hold and the idle share (what a replay of drawn sleeps reproduces; a step
past the server's knee holds longer, since its statements wait: that miss is the finding, not an
error of the replay), and for the hold at least TURN_SPREAD_MS for each of the client's
turnarounds (one before each statement and one before COMMIT): they belong to the client's
machine and its load, not to the application; 10% for statements per transaction (set by the
scripts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pgknee.analyze.words import clause
from pgknee.model.keys import observed
from pgknee.model.results import ReplayedStatement, RunData, StepRecord
from pgknee.model.server import DatabaseStep

HOLD_TOL = 0.15
# a client's turnaround between two statements moves with its machine's load: pgbench's measured
# 0.29-0.55 ms on one 2-CPU machine, the application alone or beside pgknee's samplers (three
# applications' captures). A vote of five turnarounds held 2.4 ms observed alone, 2.9 when the
# application's own scripts ran under pgknee (0.1 ms more each), and 3.2 replayed; a social
# network's one-statement transactions 0.6 observed and 0.7 replayed
TURN_SPREAD_MS = 0.2
SHARE_TOL = 0.15
STATEMENTS_TOL = 0.10  # the observation's own count ran 3.5% under pgbench's (2.52 against 2.61),
# and a step of ~1,000 transactions draws its scripts with ~2% of noise (make slow: 2.65 at 8 clients)


@dataclass(frozen=True)
class Captured:
    hold_ms: float
    idle_share: float | None
    statements_per_transaction: float | None


@dataclass(frozen=True)
class HoldRow:
    step_id: int
    clients: int
    rep: int
    hold_ms: float | None
    idle_share: float | None
    statements_per_transaction: float | None
    misses: tuple[str, ...]  # what is outside its tolerance

    @property
    def within(self) -> bool:
        return not self.misses


@dataclass(frozen=True)
class HoldCheck:
    captured: Captured
    rows: tuple[HoldRow, ...]


def _observed(env: Mapping[str, str], name: str) -> float | None:
    """One figure --observe recorded with the run, None when it did not."""
    v = env.get(observed(name))
    return float(v) if v is not None else None


def captured_of(env: Mapping[str, str]) -> Captured | None:
    """The application's figures, as the replay's run recorded them (none: not observed)."""
    hold = _observed(env, "hold_ms")
    return (Captured(hold, _observed(env, "idle_share"), _observed(env, "statements_per_transaction"))
            if hold is not None else None)


def _off(value: float | None, ref: float | None, tol: float, slack: float = 0.0) -> bool:
    return value is not None and ref is not None and ref > 0 and abs(value - ref) > max(tol * ref, slack)


def hold_check(env: Mapping[str, str], steps: Sequence[StepRecord], pgdb: Mapping[int, DatabaseStep],
               replayed: Sequence[ReplayedStatement]) -> HoldCheck | None:
    cap = captured_of(env)
    if cap is None:
        return None
    calls: dict[int, float] = {}
    for r in replayed:
        calls[r.step_id] = calls.get(r.step_id, 0.0) + float(r.calls)
    rows = []
    turns = (cap.statements_per_transaction or 1.0) + 1.0
    for s in steps:
        db, n = pgdb.get(s.step_id), s.transactions
        if s.status != "completed" or db is None or not n:
            continue
        active, idle = db.active_time, db.idle_in_transaction_time
        hold = (active + idle) / n if active is not None and idle is not None else None
        share = idle / (active + idle) if active is not None and idle is not None and active + idle > 0 else None
        spt = calls[s.step_id] / n if s.step_id in calls else None
        misses = tuple(what for what, bad in (
            ("hold", _off(hold, cap.hold_ms, HOLD_TOL, turns * TURN_SPREAD_MS)),
            ("idle share", _off(share, cap.idle_share, SHARE_TOL)),
            ("statements per transaction", _off(spt, cap.statements_per_transaction, STATEMENTS_TOL))) if bad)
        rows.append(HoldRow(s.step_id, s.clients, s.rep, hold, share, spt, misses))
    return HoldCheck(cap, tuple(rows))


def hold_warnings(check: HoldCheck | None) -> list[str]:
    """One line per step that did not hold its connections as the application did."""
    if check is None:
        return []
    c = check.captured
    return [f"step c{r.clients} rep {r.rep} did not replay the application's transactions within tolerance "
            f"({', '.join(r.misses)}): hold {r.hold_ms or 0:.1f} ms against the application's {c.hold_ms:.1f} ms "
            f"('pgknee workload mix' shows each figure)" for r in check.rows if not r.within]


def application_terms(env: Mapping[str, str], count: int | None) -> list[str]:
    """A replay's answer in the application's terms: which hold time the sweep ran with, and the
    recommended count beside what the application keeps open and busy now (none: not observed)."""
    cap = captured_of(env)
    if cap is None:
        return []
    share = clause(", {:.0%} of it idle inside the transaction", cap.idle_share)
    out = [f"hold time: the application's as captured, {cap.hold_ms:.1f} ms per transaction{share} (the replay held "
           "its transactions open as long: 'pgknee workload mix' checks each step)"]
    opened, busy = _observed(env, "sessions_open_p99"), _observed(env, "sessions_busy_p99")
    if opened is None or busy is None or count is None:
        return out
    if count >= opened:
        now = f"at least the {opened:.0f} sessions it keeps open now: the database can take more than it is given"
    else:
        now = f"fewer than the {opened:.0f} sessions it keeps open now ({busy:.0f} busy at p99)"
    out.append(f"the application: {count} connections is {now}; a pooler in transaction mode would hand the server "
               f"about {busy:.0f} busy connections at p99 instead of {opened:.0f} open, never fewer: it cannot shorten "
               "the time a transaction idles inside")
    return out


def run_hold_check(data: RunData) -> HoldCheck | None:
    """hold_check over a loaded run: its steps' pg_stat_database changes and statement mix."""
    return hold_check(data.env, data.steps, {s.step_id: data.database(s.step_id) for s in data.steps},
                      data.statement_mix[1])
