"""One way to collect around a step's bench phase. A collector says what it needs of the server
(`needs`), reads its counters when the phase begins and again when it has ended, and hands back
typed records (pgknee.serverstats); `StepCollectors` holds the run's collectors and drives them
all the same way, so adding one touches its own module, its query files and its table only.

A collector that cannot run on this server is left out with its reason, which the run's
environment records (`collect.NAME`); one whose first read fails is left out the same way. A read
that fails later costs that step its record, not the step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from pgknee.errors import first_line
from pgknee.serverstats import ServerRecord


@dataclass(frozen=True)
class Needs:
    """What a collector needs of the server: a version (server_version_num) at least, and why."""

    since: int = 0
    lacking: str = ""  # what a server older than `since` lacks, for the note


class Collector(Protocol):
    """A source of a step's server-side records."""

    name: str
    needs: Needs

    def available(self, conn: psycopg.Connection[Any]) -> str | None:
        """None when this server and role can serve it (an extension installed, say), else why not."""

    def begin(self, conn: psycopg.Connection[Any]) -> None:
        """Read the counters as the bench phase begins."""

    def end(self, conn: psycopg.Connection[Any]) -> tuple[ServerRecord, ...]:
        """Read them again once the phase has ended and its statistics settled: the phase's records
        (none when the begin read failed)."""


class StepCollectors:
    """The run's collectors: those the server can serve, driven in order on pgknee's statistics
    connection. `reads` counts the statements they ran (each a commit in the benchmark database,
    which the check of commits against transactions takes out)."""

    def __init__(self, candidates: Sequence[Collector], version_num: int) -> None:
        self.active: list[Collector] = []
        self.notes: dict[str, str] = {}
        self.reads = 0
        for c in candidates:
            if version_num < c.needs.since:
                self.notes[c.name] = f"off: PostgreSQL {version_num // 10000} {c.needs.lacking}"
            else:
                self.active.append(c)
                self.notes[c.name] = "on"

    def check(self, conn: psycopg.Connection[Any]) -> None:
        """One trial read of each: a collector this role or server cannot read is left out, with why."""
        for c in list(self.active):
            try:
                if (why := c.available(conn)) is not None:
                    self.active.remove(c)
                    self.notes[c.name] = f"off: {why}"
                    continue
                c.begin(conn)
                c.end(conn)
            except psycopg.Error as e:
                self.active.remove(c)
                self.notes[c.name] = f"off: {first_line(e)}"
            self.reads += 2

    def begin(self, conn: psycopg.Connection[Any]) -> None:
        for c in self.active:
            self.reads += 1
            try:
                c.begin(conn)
            except psycopg.OperationalError:
                raise  # the connection is gone: the step finds out about the server
            except psycopg.Error:
                continue  # its end then returns nothing for this step

    def end(self, conn: psycopg.Connection[Any]) -> tuple[ServerRecord, ...]:
        records: list[ServerRecord] = []
        for c in self.active:
            self.reads += 1
            try:
                records += c.end(conn)
            except psycopg.OperationalError:
                raise
            except psycopg.Error:
                continue
        return tuple(records)
