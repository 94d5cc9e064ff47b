"""collect.pgstats without a server: pg_stat_database's change as a typed record, a restart told
apart, the wait for settled counters; and the collectors' statements counted as they run."""

from __future__ import annotations

from typing import Any

from pgknee.collect.pgstats import SERVER_START, change, settled
from pgknee.collect.protocol import Needs, StepCollectors
from pgknee.serverstats import DatabaseStep, ServerRestart, WalStep


def test_the_change_of_the_counters_the_server_has() -> None:
    before = {"xact_commit": 100.0, "blks_hit": 5.0, "active_time": 10.0, SERVER_START: 1e9}
    after = {"xact_commit": 1100.0, "blks_hit": 905.0, "active_time": 2010.5, SERVER_START: 1e9}
    d = change(before, after)
    assert d == DatabaseStep(xact_commit=1000.0, blks_hit=900.0, active_time=2000.5)
    assert isinstance(d, DatabaseStep) and d.sessions is None  # a counter neither read had (before 14)
    assert dict(d.items()) == {"xact_commit": 1000.0, "blks_hit": 900.0, "active_time": 2000.5}
    assert DatabaseStep.of_items(dict(d.items())) == d


def test_a_restart_is_told_not_taken_for_a_change() -> None:
    before = {"xact_commit": 100.0, SERVER_START: 1e9}
    assert change(before, {"xact_commit": 3.0, SERVER_START: 1e9 + 60}) == ServerRestart(1e9, 1e9 + 60)
    assert change(before, {}) == ServerRestart(1e9, None)  # the second read found no row


def test_settled_waits_until_two_reads_agree() -> None:
    reads = iter([{"xact_commit": 10.0, "active_time": 1.0}, {"xact_commit": 50.0, "active_time": 3.0},
                  {"xact_commit": 51.0, "active_time": 3.0}, {"xact_commit": 99.0, "active_time": 9.0}])
    assert settled(lambda: next(reads), 5.0) == {"xact_commit": 51.0, "active_time": 3.0}


def test_settled_gives_up_after_its_time() -> None:
    n = iter(range(1000))

    def moving() -> dict[str, float]:
        i = next(n)
        return {"xact_commit": 100.0 * i, "active_time": float(i)}

    got = settled(moving, 0.5)
    assert 2 <= got["active_time"] <= 4  # a read at once, then every 0.25 s up to 0.5 s


class Counting:
    name = "counting"
    needs = Needs()

    def __init__(self, per_read: int) -> None:
        self.per_read = per_read
        self.queries_run = 0

    def available(self, conn: Any) -> str | None:
        return None

    def begin(self, conn: Any) -> None:
        self.queries_run += self.per_read

    def end(self, conn: Any) -> tuple[WalStep, ...]:
        self.queries_run += self.per_read
        return (WalStep(1, 0, 1.0, 0, None, None, None, None),)


def test_the_collectors_statements_are_counted_as_they_run() -> None:
    one, settling = Counting(1), Counting(3)  # a pg_stat_database read that settles takes several
    collectors = StepCollectors([one, settling], 150000)
    collectors.begin(None)  # type: ignore[arg-type]
    assert len(collectors.end(None)) == 2  # type: ignore[arg-type]
    assert collectors.reads == 8
