"""`pgknee workload capture --observe DURATION`: the application watched as it runs, read only,
for a window: pg_stat_activity sampled at the sampler's rate (its sessions, their transactions and
states), and pg_stat_database and pg_stat_statements read as the window begins and ends (their
change over it, not their totals since a reset). What it tells (Observation, in the manifest):
how many transactions a second and of which shape, how long each holds its connection and how much
of that the application spends idle inside it, how many sessions it keeps open and busy.

Means come from the server's counters, which count every transaction: the hold time of a
transaction is (active_time + idle_in_transaction_time) / (commits + rollbacks). Percentiles come
from the sampled transactions (workloads.captured.transactions). pgknee's own statements in the
window (each an autocommit transaction of the database, marked /* pgknee:observe */) are taken out
of the counters: their count exactly, their time as pgknee measured it (an upper bound).

Nothing is written: the session is read-only (default_transaction_read_only) and resets nothing.
It reads pg_stat_statements' normalised texts to tell transaction control (BEGIN, COMMIT) and its
own statements from the application's; the capture keeps them as it always has (the scripted
ones, and those it could not script unless they may hold literal values). pg_stat_activity's
query texts are never read."""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from pgknee.workloads import queries
from pgknee.workloads.captured import sqlmap
from pgknee.workloads.captured import transactions as tx
from pgknee.workloads.captured.manifest import Observation, Spread, per_transaction
from pgknee.workloads.captured.moves import MOVES_S

OWN_MARK = "pgknee:observe"
MIN_WINDOW_S = 1.0
MIN_EXACT = 20  # transactions seen to end exactly, for percentiles of those alone
# faster than the run's sampler: a transaction is grouped only by what two samples inside it show,
# and the application's are tens of milliseconds long
INTERVAL_S = 0.005  # a 5 ms transaction's statements are seen together now and then
COST_READS = 16  # the interval doubles when the median of this many reads takes more than a third of it


@dataclass(frozen=True)
class StatementCounts:
    """A pg_stat_statements entry (summed over users): its change over the window when observed,
    else its totals (queryid 0)."""

    queryid: int
    query: str
    calls: int
    total_ms: float
    rows: int
    blocks: int = 0  # shared blocks hit and read by its executions


@dataclass(frozen=True)
class Watched:
    """What the window read, before it is summed up (kept apart for the grouping of statements)."""

    observation: Observation
    statements: list[StatementCounts]  # the application's, by their change over the window
    transactions: list[tx.Transaction]  # those the samples saw end
    begins: int | None  # BEGIN's (and START TRANSACTION's) calls in the window; None: not counted
    # pg_stat_statements' calls by queryid, read every moves.MOVES_S (which statements move together)
    moves: tuple[dict[int, int], ...] = ()


def _statements(conn: psycopg.Connection[Any]) -> dict[int, StatementCounts]:
    rows = conn.execute(queries.text("observe_statements")).fetchall()
    return {int(q): StatementCounts(int(q), str(t), int(c), float(ms), int(r), int(b))
            for q, t, c, ms, r, b in rows if q is not None}


def _database(conn: psycopg.Connection[Any]) -> dict[str, float]:
    row = conn.execute(queries.text("observe_database")).fetchone()
    names = ("xact_commit", "xact_rollback", "active_time", "idle_in_transaction_time", "sessions", "session_time",
             "at")
    return {k: float(v) for k, v in zip(names, row or (), strict=False) if v is not None}


def _calls(conn: psycopg.Connection[Any]) -> dict[int, int]:
    return {int(q): int(c) for q, c in conn.execute(queries.text("observe_calls")).fetchall() if q is not None}


def _sample(conn: psycopg.Connection[Any]) -> tx.Sample:
    rows = conn.execute(queries.text("observe_activity")).fetchall()  # one at least: the clock's, joined
    at = float(rows[0][0])
    return tx.Sample(at, tuple(tx.SessionSeen(int(pid), float(bs or 0.0), xs, st, sc, qid, qs)
                               for _, pid, bs, xs, st, sc, qid, qs in rows if pid is not None))


def watch(conn: psycopg.Connection[Any], window_s: float, interval_s: float, version_num: int,
          progress: Callable[[float], None] = lambda _: None) -> Watched:
    """Watch the application for `window_s` on `conn` (autocommit, read-only)."""
    conn.execute(queries.text("observe_read_only"))
    row = conn.execute(queries.text("observe_track_utility")).fetchone()
    utility = row is None or row[0] != "off"  # BEGIN and COMMIT counted (its default)
    own = 0
    own_s = 0.0

    def timed(read: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        nonlocal own, own_s
        t0 = time.perf_counter()
        try:
            return read(conn)
        finally:
            own += 1
            own_s += time.perf_counter() - t0

    before_db = timed(_database)
    own, own_s = 1, 0.0  # that read's own transaction committed after it read: in the window's counters
    before_st = timed(_statements)
    samples: list[tx.Sample] = []
    moves: list[dict[int, int]] = []
    t0 = time.monotonic()
    next_at, moved_at = t0, t0 - MOVES_S  # the next sample's time; the last read of the calls'
    recent: list[float] = []
    while (waited := time.monotonic() - t0) < window_s:
        if time.monotonic() - moved_at >= MOVES_S * 0.999:
            moved_at = time.monotonic()
            moves.append(timed(_calls))
        t1 = time.perf_counter()
        samples.append(timed(_sample))
        recent = [*recent[-(COST_READS - 1):], time.perf_counter() - t1]
        if len(recent) == COST_READS and statistics.median(recent) > interval_s / 3 and interval_s < 1.0:
            interval_s, recent = min(1.0, interval_s * 2), []  # the reads cost the server more than they should
        progress(waited)
        next_at += interval_s
        time.sleep(max(0.0, next_at - time.monotonic()))
    after_st = timed(_statements)
    if version_num >= 150000:  # every statement of its own reported before the end read (at most 1 s late else)
        timed(lambda c: c.execute(queries.text("observe_flush")).fetchall())
    after_db = _database(conn)  # (its own transaction commits after this read: not counted)
    w = dataclasses.replace(summarise(before_db, after_db, before_st, after_st, samples, interval_s, own,
                                      own_s * 1000.0), moves=tuple(moves))
    if utility:
        return w
    note = ("pg_stat_statements.track_utility is off: BEGIN's calls are not counted, so the transactions of "
            "several statements were told from the samples alone")
    return dataclasses.replace(w, begins=None, observation=dataclasses.replace(
        w.observation, notes=[*w.observation.notes, note]))


def _change(before: dict[int, StatementCounts], after: dict[int, StatementCounts]) -> list[StatementCounts]:
    out = []
    for qid, a in after.items():
        b = before.get(qid, StatementCounts(qid, "", 0, 0.0, 0))
        if a.calls - b.calls > 0 and OWN_MARK not in a.query:
            out.append(StatementCounts(qid, a.query, a.calls - b.calls, max(0.0, a.total_ms - b.total_ms),
                                       max(0, a.rows - b.rows), max(0, a.blocks - b.blocks)))
    return out


def _application(statements: list[StatementCounts]) -> tuple[list[StatementCounts], int]:
    """The application's statements, and how many transactions BEGIN (or START TRANSACTION) opened:
    transaction control is not one of its statements."""
    control = [s for s in statements if sqlmap.parse(s.query).kind == "transaction"]
    begins = sum(s.calls for s in control if s.query.lstrip().upper().startswith(("BEGIN", "START")))
    return [s for s in statements if s not in control], begins


def _spread(values: list[tuple[float, float]], scale: float = 1.0) -> Spread:
    if not values:
        return Spread()
    q = [tx.weighted_quantile(values, p) for p in (0.5, 0.9, 0.99)]
    top = max(v for v, _ in values)
    return Spread(*(round(x * scale, 3) for x in (*q, top)))  # (weights() gives each a weight: 1 or more)


def _counts(values: list[int]) -> Spread:
    if not values:
        return Spread()
    s = sorted(values)

    def at(p: float) -> float:
        return float(s[min(len(s) - 1, int(p * len(s)))])

    return Spread(at(0.5), at(0.9), at(0.99), float(s[-1]))


def summarise(before_db: dict[str, float], after_db: dict[str, float],
              before_st: dict[int, StatementCounts], after_st: dict[int, StatementCounts],
              samples: list[tx.Sample], interval_s: float, own: int, own_ms: float) -> Watched:
    """The window's reads summed up (pure)."""
    window = max(1e-6, after_db.get("at", 0.0) - before_db.get("at", 0.0))
    gaps = [b.at - a.at for a, b in zip(samples, samples[1:], strict=False)]
    interval_s = statistics.median(gaps) if gaps else interval_s  # as sampled (slowed when the read was slow)
    d = {k: after_db[k] - before_db[k] for k in after_db if k in before_db and k != "at"}
    notes: list[str] = []
    rollbacks = max(0.0, d.get("xact_rollback", 0.0))
    n_tx = max(0.0, d.get("xact_commit", 0.0) - own) + rollbacks  # pgknee's own commits out
    active = max(0.0, d.get("active_time", 0.0) - own_ms)
    idle = d.get("idle_in_transaction_time", 0.0)
    app, begins = _application(_change(before_st, after_st))
    seen = tx.transactions(samples)
    exact = [t for t in seen if t.exact]
    weighted = tx.weights(exact if len(exact) >= MIN_EXACT else seen, interval_s)
    if seen and len(exact) < MIN_EXACT:
        notes.append(f"only {len(exact)} sampled transactions ended where the samples could tell exactly: the "
                     "percentiles include ends only bounded (a longer window, or sessions that idle between "
                     "their transactions, tell more)")
    open_per = [sum(1 for x in s.sessions if x.state is not None) for s in samples]
    busy_per = [sum(1 for x in s.sessions if x.state is not None and x.state != "idle") for s in samples]
    hidden = max((sum(1 for x in s.sessions if x.state is None) for s in samples), default=0)
    if hidden:
        notes.append(f"up to {hidden} sessions of other roles were hidden from this role: GRANT pg_read_all_stats "
                     "to see them (their transactions are in the counters, not in the percentiles)")
    if n_tx < 1:
        notes.append("no transaction of the application ended in the window: was it running?")
    if not seen and samples:
        notes.append("the samples saw no transaction end: a longer window, or the application was idle")
    hold = per_transaction(active + idle, n_tx)
    think = _think(samples, hold)
    explicit = [(t.idle_s, w) for t, w in weighted if t.explicit]
    obs = Observation(
        window_s=round(window, 3), interval_s=round(interval_s, 4), samples=len(samples),
        transactions_per_s=round(n_tx / window, 3), rollbacks_per_s=round(rollbacks / window, 3),
        explicit_per_s=round(begins / window, 3),
        statements_per_transaction=_r(per_transaction(sum(s.calls for s in app), n_tx)),
        hold_ms=_r(hold), active_ms=_r(per_transaction(active, n_tx)),
        idle_in_transaction_ms=_r(per_transaction(idle, n_tx)),
        idle_share=round(idle / (active + idle), 4) if active + idle > 0 else None,
        transaction_ms=_spread([(t.duration_s, w) for t, w in weighted], 1000.0),
        explicit_idle_ms=_spread(explicit, 1000.0), transactions_seen=len(seen),
        transactions_exact=sum(1 for t in seen if t.exact), sessions_open=_counts(open_per),
        sessions_busy=_counts(busy_per),
        new_connections_per_s=round(d["sessions"] / window, 3) if "sessions" in d else None,
        think_ms=_r(think), hidden_sessions=hidden, own_statements=own,
        counters={k: round(v, 3) for k, v in d.items()}, notes=notes)
    return Watched(obs, app, seen, begins)


def _think(samples: list[tx.Sample], hold_ms: float | None) -> float | None:
    """A working session's time between its transactions, mean: of the sessions seen busy at least
    once (a session parked idle all along is not the application's loop), the share of samples
    busy is hold / (hold + think)."""
    busy: dict[int, int] = {}
    every: dict[int, int] = {}
    for s in samples:
        for x in s.sessions:
            if x.state is not None:
                every[x.pid] = every.get(x.pid, 0) + 1
                busy[x.pid] = busy.get(x.pid, 0) + (x.state != "idle")
    working = [p for p, n in busy.items() if n > 0]
    n_busy, n_all = sum(busy[p] for p in working), sum(every[p] for p in working)
    if hold_ms is None or n_busy == 0:
        return None
    return hold_ms * (n_all - n_busy) / n_busy


def _r(x: float | None) -> float | None:
    return round(x, 3) if x is not None else None
