"""collect.pgstats without a server: pg_stat_database's change as a typed record, a restart told
apart, the wait for settled counters; and the collectors' statements counted as they run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from pgknee.collect.pgstats import SERVER_START, change, settled
from pgknee.collect.protocol import StepProcesses
from pgknee.model.server import DatabaseStep, ServerRestart


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


class Flaky:
    """A session that is lost at the n-th statement (a DBA's pg_terminate_backend, a restart)."""

    def __init__(self, rows: list[dict[str, float]], lost_at: int | None = None) -> None:
        self.rows, self.lost_at, self.n = rows, lost_at, 0

    def read(self) -> dict[str, float]:
        self.n += 1
        if self.n == self.lost_at:
            raise psycopg.OperationalError("terminating connection due to administrator command")
        return self.rows[min(self.n - 1, len(self.rows) - 1)]


@dataclass
class Session:
    conn: Any


def test_a_settled_read_on_a_lost_session_is_read_again_and_still_tells_a_restart(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first read is kept until the second worked: tried again on a new session (the server
    restarted meanwhile), the collector sees the start time move, as the step must be told; each
    read is counted."""
    from pgknee.collect import pgstats

    session = Session(Flaky([{"xact_commit": 10.0, SERVER_START: 1e9}], lost_at=2))
    monkeypatch.setattr(pgstats, "snapshot", lambda conn: conn.read())
    c = pgstats.DatabaseCollector(session, settle_s=0.3)
    c.begin_step(StepProcesses(1))
    c.set_phase("bench")
    with pytest.raises(psycopg.OperationalError):
        c.settled()
    session.conn = Flaky([{"xact_commit": 2.0, SERVER_START: 1e9 + 30}])
    c.settled()
    assert c.end_step() == (ServerRestart(1e9, 1e9 + 30),)
    assert c.end_step() == ()  # ended: nothing more for this step
    assert c.queries_run >= 3  # a settled read is two reads at least


def test_no_first_read_no_record() -> None:
    from pgknee.collect import pgstats

    c = pgstats.DatabaseCollector(Session(None), settle_s=0.3)
    c.begin_step(StepProcesses(1))
    c.settled()  # the bench phase's first read failed (or never ran): nothing to difference
    assert c.end_step() == ()
