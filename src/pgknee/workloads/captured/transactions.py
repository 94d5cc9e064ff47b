"""The application's transactions, from samples of pg_stat_activity (pure).

Each sample lists the database's client sessions: pid, when the session's transaction began
(xact_start), its state and when that state began (state_change), the statement it runs or last
ran (query_id). A transaction is a (pid, xact_start) seen in one sample or more; it ended

- exactly, when a later sample finds the session idle: its state_change is when it went idle,
  which is when the transaction ended (its COMMIT, or the autocommit statement, returned);
- at most when the session's next transaction began (the sample shows another xact_start);
- about halfway to the next sample when the session was gone (it disconnected).

An end is exact only when the idle session's last statement (query_start) belongs to this
transaction; a session that ran others between two samples gives an end only bounded.
A sampler every T seconds sees a transaction of d seconds with the chance min(1, d/T): short
ones are missed more often than long ones. Each seen transaction is weighed by the inverse of
that chance (max(1, T/d)), so the percentiles estimate all transactions, not the sampled ones.
Its time idle in transaction is estimated as its duration times the share of its samples in
that state; the observation's counters (pg_stat_database) give the exact means."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

IDLE_IN_TX = ("idle in transaction", "idle in transaction (aborted)")


@dataclass(frozen=True)
class SessionSeen:
    """One client session in one sample (times in epoch seconds, the server's clock)."""

    pid: int
    backend_start: float
    xact_start: float | None
    state: str | None  # None: hidden from this role (another role's session, without pg_read_all_stats)
    state_change: float | None
    query_id: int | None
    query_start: float | None = None  # its statement's start (when idle: its last statement's)


@dataclass(frozen=True)
class Sample:
    at: float  # the server's clock as it read pg_stat_activity
    sessions: tuple[SessionSeen, ...]


@dataclass
class Transaction:
    pid: int
    start: float
    first_seen: float
    last_seen: float
    samples: int  # the samples that saw it: one at least (made by the first, which counts itself)
    idle_samples: int = 0
    statements: list[int] = field(default_factory=list)  # query_ids in the order first seen
    end: float | None = None
    exact: bool = False
    # first seen running a statement that began its transaction (query_start == xact_start): an
    # autocommit statement (or BEGIN). A statement later in a BEGIN ... COMMIT starts after its
    # transaction; under the extended protocol an autocommit one may too (Bind begins it), so only
    # equality is evidence
    autocommit: bool = False
    # each statement's start, s after its transaction's (query_start - xact_start), as first seen: the
    # first after BEGIN starts a turnaround in, a later one after the statements before it
    offsets: dict[int, float] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return max(0.0, (self.end if self.end is not None else self.last_seen) - self.start)

    @property
    def idle_s(self) -> float:
        """Its time idle in transaction, estimated from the share of its samples in that state."""
        return self.duration_s * self.idle_samples / self.samples

    @property
    def explicit(self) -> bool:
        """Inside BEGIN ... COMMIT: seen idle in it, or running two statements or more."""
        return self.idle_samples > 0 or len(self.statements) > 1


class _Tracker:
    """Each session's open transaction, closed as the samples tell it ended."""

    def __init__(self) -> None:
        self.open: dict[int, Transaction] = {}
        self.done: list[Transaction] = []

    def close(self, pid: int, end: float, exact: bool) -> None:
        t = self.open.pop(pid)
        t.end, t.exact = max(end, t.last_seen), exact
        self.done.append(t)

    def see(self, at: float, s: SessionSeen) -> None:
        t = self.open.get(s.pid)
        if s.xact_start is None:  # idle: its last transaction ended as it went idle
            if t is not None:
                self._ended_idle(t, at, s)
            return
        if t is not None and t.start != s.xact_start:
            self.close(s.pid, s.xact_start, False)  # the next one began: it had ended by then
            t = None
        if t is None:
            t = self.open[s.pid] = Transaction(s.pid, s.xact_start, at, at, 0)  # this sample counted below
            t.autocommit = s.state == "active" and (s.query_start is None or abs(s.query_start - s.xact_start) < 1e-6)
        t.last_seen = at
        t.samples += 1
        t.idle_samples += s.state in IDLE_IN_TX
        if s.query_id is not None and s.query_id not in t.statements:
            t.statements.append(s.query_id)
            if s.query_start is not None:
                t.offsets[s.query_id] = max(0.0, s.query_start - s.xact_start)


    def _ended_idle(self, t: Transaction, at: float, s: SessionSeen) -> None:
        """Idle now: it went idle at state_change, the end of its last transaction, which is this one
        only if no other ran in between: an autocommit statement's own start is its transaction's
        (query_start == xact_start); a later COMMIT began after this one was last seen. Else the
        end is somewhere before this sample: halfway, not exact."""
        sc, qs = s.state_change, s.query_start
        same = sc is not None and sc >= t.start and (
            qs is None or (qs >= t.last_seen - 1e-6 if t.explicit else abs(qs - t.start) < 1e-6))
        self.close(s.pid, sc if same and sc is not None else (t.last_seen + at) / 2, same)


def transactions(samples: Sequence[Sample]) -> list[Transaction]:
    """The transactions the samples saw end (a transaction still open at the last sample is left
    out: its end is unknown)."""
    track = _Tracker()
    for sample in samples:
        readable = [s for s in sample.sessions if s.state is not None]
        for s in readable:
            track.see(sample.at, s)
        present = {s.pid for s in sample.sessions}
        for pid in [p for p in track.open if p not in present]:
            track.close(pid, (track.open[pid].last_seen + sample.at) / 2, False)  # the session went away
    return track.done


def weights(txs: Iterable[Transaction], interval_s: float) -> list[tuple[Transaction, float]]:
    """Each transaction with the inverse of its chance to be sampled."""
    return [(t, max(1.0, interval_s / t.duration_s) if t.duration_s > 0 else 1.0) for t in txs]


def weighted_quantile(values: Sequence[tuple[float, float]], q: float) -> float:
    """The q-quantile (0..1) of (value, weight) pairs: the smallest value whose cumulative weight
    reaches q of the total. Pairs of a positive weight, one at least (weights() gives every
    transaction one, 1 or more); ValueError without, as statistics.median on no data."""
    pairs = sorted((v, w) for v, w in values if w > 0)
    total = sum(w for _, w in pairs)
    if not pairs:
        raise ValueError("a quantile of no weighted values")
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= q * total - 1e-12:
            return v
    return pairs[-1][0]


def weighted_mean(values: Sequence[tuple[float, float]]) -> float:
    """The mean of (value, weight) pairs, of a positive total weight (weights()'s)."""
    return sum(v * w for v, w in values) / sum(w for _, w in values)
