"""One exception tree. Everything a user can cause or meet ends up here and is
turned into one line and an exit code by the CLI, and nowhere else.

Exit codes: 1 a bug (internal error), 2 bad input, 3 the server, 4 pgbench, 5 the collector
database (store), 6 the pooler, 7 the store is busy (another process holds it, or the run,
longer than pgknee waits: try again when it is done), 8 the store's disk is full (free space;
what was measured is kept in a side file the error line names), 9 a --fail-if gate failed
(pgknee compare: the command worked, the change it measured is beyond a rule), 130 interrupted, 141 a broken
pipe on standard output (quietly, as a shell reports SIGPIPE).

`from_exception` maps the exceptions of the standard library and the drivers that a user can
meet (SQLite's, files', a text file that is not UTF-8, the server connection's) to the tree."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

BROKEN_PIPE = 141  # 128 + SIGPIPE
# every exit code pgknee gives, and what it means: the help of each command and the docs say these
EXIT_CODES: dict[int, str] = {
    0: "done", 1: "an internal error (please report it)", 2: "bad input (nothing started or written)",
    3: "the server (unreachable, refused, too small, gone)", 4: "pgbench", 5: "the store (not pgknee's, newer, "
    "read-only, damaged, no such run)", 6: "the pooler", 7: "the store busy", 8: "the store's disk full",
    9: "a compare --fail-if rule failed", 10: "no answer to act on", 130: "interrupted",
    141: "a broken pipe on standard output"}
GATE_FAILED = 9  # pgknee compare --fail-if: a rule failed (not an error: the comparison was made)


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


class NoAnswer(PgkneeError):
    """A sweep measured as asked that holds no count to act on (peak not reached, withheld, too few
    counts): not bad input; what to run next is in the line."""

    exit_code = 10


class PoolerError(PgkneeError):
    """The connection pooler (pgbouncer)."""

    exit_code = 6


class Interrupted(PgkneeError):
    """Ctrl-C or SIGTERM: stop cleanly, keep what was measured."""

    exit_code = 130


class DbError(Exception):
    """An error of a PostgreSQL results store's session (the psycopg error is its cause), kept
    apart from the target server's errors: store_error says it in one line."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.sqlstate: str | None = getattr(cause, "sqlstate", None)


# ---- the standard library's and the drivers' exceptions, mapped -------------------------------------
def store_error(e: BaseException, path: str | Path | None, doing: str | None = None,
                timeout_s: float | None = None) -> StoreError:
    """An SQLite error on the collector database at `path`, as one line with its cause and a fix.
    `doing`: what pgknee was doing ('writing step 3'); `timeout_s`: how long it waited for a lock."""
    during = f" ({doing})" if doing else ""
    if isinstance(e, DbError):
        return _pg_store_error(e, path, during)
    name = getattr(e, "sqlite_errorname", None) or ""
    what = f"the collector database {path}" if path else "the collector database"
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
                         "PGKNEE_STORE_TIMEOUT (e.g. 60s)")
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


def _pg_store_error(e: DbError, label: str | Path | None, during: str) -> StoreError:
    """A PostgreSQL results store's error: its first line, and what to do (`during`: store_error's
    ' (what pgknee was doing)', or '')."""
    what = f"the results store {label}" if label else "the results store"
    first = first_line(e.cause) if not str(e).strip() else first_line(e)
    state = e.sqlstate or ""
    if state == "53100":
        return StoreFull(f"{what}: its server's disk is full{during}", "free space on the store's server")
    if state == "42501":
        return StoreError(f"{what} refused pgknee{during}: {first}",
                          "grant the store's role CREATE on its database once (pgknee makes its schema 'pgknee'), "
                          "or make the schema for it: CREATE SCHEMA pgknee AUTHORIZATION that_role")
    if state == "25006":
        return StoreError(f"{what} is read-only{during}: {first}", "give --store a writable store")
    if not state or state.startswith("08") or state.startswith("57P"):
        return StoreError(f"lost the connection to {what}{during}: {first}",
                          "check that the store's server is up; steps stored before are kept")
    return StoreError(f"{what}: {first}{during}", "check the store's server and its log")


def first_line(e: BaseException | str, *, last: bool = False) -> str:
    """An error's first (or last) line that says something, stripped; its type's name when it says
    nothing. The one way pgknee quotes an error in one line."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    if lines:
        return lines[-1] if last else lines[0]
    return "" if isinstance(e, str) else type(e).__name__


def os_error(e: OSError) -> PgkneeError:
    """A file or directory pgknee could not read, write or create."""
    where = f"{e.filename}: " if e.filename is not None else ""
    why = e.strerror or str(e)
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return UserError(f"{where}no space left on the device", "free space on it, or choose another path")
    if e.errno in (errno.EACCES, errno.EPERM):
        return UserError(f"{where}permission denied", "check the file's and its directory's permissions")
    if e.errno == errno.EROFS:
        return UserError(f"{where}read-only file system", "choose a path on a writable file system")
    if e.errno == errno.EMFILE or e.errno == errno.ENFILE:
        return UserError(f"too many open files ({why})", "raise the limit (ulimit -n) or use fewer clients")
    return UserError(f"{where}{why}", "check the path and the device")


def from_exception(e: BaseException, *, store: str | None = None) -> PgkneeError | None:
    """The error tree's view of an exception a user can meet, or None for a bug. `store`: the
    collector database the command used, named in the line of an SQLite error."""
    import sqlite3

    if isinstance(e, PgkneeError):
        return e
    if isinstance(e, sqlite3.Error | DbError):
        return store_error(e, store)
    if isinstance(e, UnicodeDecodeError):
        return UserError(f"a file pgknee read is not UTF-8 text ({e.reason} at byte {e.start})",
                         "save the plan file or script as UTF-8")
    if isinstance(e, OSError):
        return os_error(e)
    if isinstance(e, MemoryError):
        return UserError("out of memory", "use fewer clients or idle sessions, or a machine with more memory")
    if type(e).__module__.split(".")[0] == "psycopg" and isinstance(e, Exception):
        first = first_line(e)
        if type(e).__name__ == "OperationalError":
            return TargetError(f"lost the connection to the server: {first}", "check the server and its log")
        return TargetError(f"the server refused: {first}", "check the user's privileges on the target")
    return None


# ---- exceptions in threads, reported in the main thread ----------------------------------------------
_lock = threading.Lock()
_thread_failures: list[tuple[str, BaseException]] = []


def record_thread_failure(thread: str, exc: BaseException) -> None:
    """threading.excepthook's record (installed by the CLI): the main thread reports it."""
    with _lock:
        _thread_failures.append((thread, exc))


def thread_failure_count() -> int:
    with _lock:
        return len(_thread_failures)


def take_thread_failures(since: int = 0) -> list[tuple[str, BaseException]]:
    """The failures recorded after the first `since`, which are then reported (and forgotten)."""
    with _lock:
        taken = _thread_failures[since:]
        del _thread_failures[since:]
        return taken


def thread_error(thread: str, exc: BaseException) -> PgkneeError:
    """A thread's exception as the one line the main thread reports."""
    mapped = from_exception(exc)
    if mapped is None:
        return PgkneeError(f"internal error in the {thread} thread: {type(exc).__name__}: {exc}",
                           "set PGKNEE_DEBUG=1 for the traceback and please report it")
    return type(mapped)(f"the {thread} thread failed: {mapped.message}", mapped.hint)


def debug() -> bool:
    return bool(os.environ.get("PGKNEE_DEBUG"))
