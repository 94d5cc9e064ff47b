"""One exception tree. Everything a user can cause or meet ends up here and is
turned into one line and an exit code by the CLI, and nowhere else.

Exit codes: 1 a bug (internal error), 2 bad input, 3 the server, 4 pgbench, 5 the collector
database (store), 6 the pooler, 7 the store is busy (another process holds it, or the run,
longer than pgknee waits: try again when it is done), 8 the store's disk is full (free space),
130 interrupted.

`store_error` says what an SQLite error on the store is, as one line with its cause and a fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3


class PgkneeError(Exception):
    """Base class: `message` says what is wrong, `hint` how to fix it."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = f"{self.message} ({self.hint})" if self.hint else self.message
        return " ".join(text.split())  # one line, whatever a message quoted


class UserError(PgkneeError):
    """Bad input: flags, values, files."""

    exit_code = 2


class TargetError(PgkneeError):
    """The PostgreSQL server: unreachable, refused, missing binaries, too small."""

    exit_code = 3


class DriverError(PgkneeError):
    """The load generator (pgbench): missing, failed, unparseable output."""

    exit_code = 4


class StoreError(PgkneeError):
    """The collector database: not a pgknee store, newer format, read-only, damaged, unknown run."""

    exit_code = 5


class StoreBusy(StoreError):
    """Another process holds the store (locked past the busy timeout) or the run (extending or
    resuming it): try again when it is done."""

    exit_code = 7


class StoreFull(StoreError):
    """No space left on the store's disk: free space; the step being written is in a side file."""

    exit_code = 8


class PoolerError(PgkneeError):
    """The connection pooler (pgbouncer)."""

    exit_code = 6


class Interrupted(PgkneeError):
    """Ctrl-C or SIGTERM: stop cleanly, keep what was measured."""

    exit_code = 130


# ---- the standard library's and the drivers' exceptions, mapped -------------------------------------
def store_error(e: sqlite3.Error, path: str | Path | None, doing: str | None = None,
                timeout_s: float | None = None) -> StoreError:
    """An SQLite error on the collector database at `path`, as one line with its cause and a fix.
    `doing`: what pgknee was doing ('writing step 3'); `timeout_s`: how long it waited for a lock."""
    name = getattr(e, "sqlite_errorname", None) or ""
    what = f"the collector database {path}" if path else "the collector database"
    during = f" ({doing})" if doing else ""
    if name.startswith("SQLITE_FULL") or "disk is full" in str(e):
        return StoreFull(f"{what}: its disk is full{during}",
                         "free space on that disk, or give --store a file on another disk")
    if name.startswith("SQLITE_READONLY"):
        return StoreError(f"{what} is read-only{during}", "make the file and its directory writable, or give "
                          "--store a writable path (show, runs and the other read commands still read it)")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        waited = f" after waiting {timeout_s:g} s" if timeout_s is not None else ""
        return StoreBusy(f"{what} is locked by another process{waited}{during}",
                         "let the other pgknee finish ('pgknee runs' lists what runs), or raise "
                         "PGKNEE_STORE_TIMEOUT (seconds)")
    if name.startswith("SQLITE_CANTOPEN"):
        return StoreError(f"cannot open {what}{during}: SQLite cannot open it or its -wal/-shm files beside it",
                          "check that the file and its directory exist and that you may read (and, to write, "
                          "write) them")
    if name.startswith("SQLITE_IOERR"):
        return StoreError(f"{what}: disk I/O error{during}",
                          "check the disk and the kernel log (dmesg); steps stored before are kept")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return StoreError(f"{what} is damaged or not an SQLite file{during}: {e}",
                          "restore it from a copy, or give --store another file")
    if name.startswith("SQLITE_CONSTRAINT"):
        return StoreError(f"{what} refused a row{during}: {e}", "this is a bug in pgknee: please report it")
    return StoreError(f"{what}: {e}{during}", "check the file, or give --store another one")
