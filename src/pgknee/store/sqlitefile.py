"""An SQLite store's file: made private, never in a directory others can write, judged before
SQLite opens it, read without leaving -wal/-shm files behind, and never opened outside SQLite by
a process that has a connection to it (store/db.py opens it through these)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pgknee.base.errors import StoreError
from pgknee.store.migrate import APPLICATION_ID, Header, foreign_mark, judge, not_a_store, raw_mark, read_header
from pgknee.store.sql import load
from pgknee.system import safefs

# The store files this process has an SQLite connection to, by (device, inode), with how many.
# Such a file is never opened again outside SQLite (to read its first bytes): closing any
# descriptor of a file drops every POSIX lock the process holds on it (fcntl semantics), the
# locks SQLite's connections rely on, and another process's connection then believes itself
# the last one and deletes the -wal that is still being written (readers see nothing new, a
# crash loses it). A second connection in the same process is SQLite's own business: it knows.
_OPEN: dict[tuple[int, int], int] = {}


def inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def count_open(owner: object, path: Path) -> Any:
    """Count a connection of this process to `path` until `owner` is closed or collected;
    returns what uncounts it (once)."""
    key = inode(path)
    if key is None:
        return lambda: None
    _OPEN[key] = _OPEN.get(key, 0) + 1

    def closed() -> None:
        _OPEN[key] -= 1
        if not _OPEN[key]:
            del _OPEN[key]
    return weakref.finalize(owner, closed)


def open_here(path: Path) -> bool:
    """This process has an SQLite connection to the file already (it was judged then)."""
    key = inode(path)
    return key is not None and key in _OPEN



def refuse_shared_dir(path: Path) -> None:
    """As root, never a store in a directory another user can write: they could put a link
    where the store, its -wal or its -shm file is about to be opened."""
    if os.geteuid() == 0 and safefs.writable_by_others(path.parent):
        raise StoreError(f"as root, pgknee keeps its store out of {path.parent}, which other users can "
                         "write (a link planted there would redirect root's writes)",
                         "give --store a path in a directory only root can write")


def private_file(path: Path) -> bool:
    """The store is the user's alone (0600; SQLite gives its -wal and -shm the same mode): it
    holds query texts and the server's settings. A new one is created so, never through a link;
    an existing one of the user's is made so. Returns whether it was made here."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.close(fd)
        return True
    except FileExistsError:
        pass
    except OSError as e:
        raise StoreError(f"cannot write the collector database {path}: {e.strerror}",
                         "choose another --store") from None
    st = os.stat(path)
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            with contextlib.suppress(OSError):
                if p.exists() and not p.is_symlink():
                    os.chmod(p, 0o600)
    return False


def uri(path: Path, mode: str, *, immutable: bool = False) -> str:
    return f"file:{quote(str(path.absolute()))}?mode={mode}" + ("&immutable=1" if immutable else "")


def connect(uri: str, timeout_s: float) -> sqlite3.Connection:
    return sqlite3.connect(uri, uri=True, timeout=timeout_s, isolation_level=None)


def check_writable(path: Path) -> None:
    """A writing command on a store it cannot write: one line before anything is started."""
    parent = path.parent
    why = None
    with contextlib.suppress(OSError):
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            why = "it is on a read-only file system"
    if why is None and not os.access(path, os.W_OK):
        why = "the file is not writable"
    if why is None and not os.access(parent, os.W_OK | os.X_OK):
        why = f"its directory {parent} is not writable (SQLite keeps its -wal and -shm files there)"
    if why is not None:
        raise StoreError(f"the collector database {path} is read-only: {why}",
                         "make it writable, or give --store another path (show, runs and the other read commands "
                         "still read it)")


class Reader:
    """A read-only connection to a store file (SQLite's mode=ro). For a WAL store SQLite makes
    the -wal and -shm files it needs beside it when they are missing: a reader that made them
    has SQLite remove them when it is done (a connection that closes last removes them, and
    changes nothing in the store), so a read leaves the directory as it found it. In a directory
    where they cannot be made, the store is read as immutable: no writer can be at work there."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self.made_index = False

    def open(self) -> tuple[sqlite3.Connection, Header]:
        p = self.path
        if not open_here(p):  # the file's own bytes first: SQLite has not touched it
            is_sqlite, application_id = raw_mark(p)
            if not is_sqlite:
                raise not_a_store(p, "it is not an SQLite file")
            if application_id not in (0, APPLICATION_ID):
                raise foreign_mark(p, application_id)
            self.made_index = not Path(f"{p}-wal").exists()
        db = connect(uri(p, "ro"), self.timeout_s)
        try:
            header = read_header(db)
        except sqlite3.OperationalError as e:
            db.close()
            if getattr(e, "sqlite_errorname", "") != "SQLITE_CANTOPEN" or not self.made_index \
                    or Path(f"{p}-shm").exists():
                raise
            self.made_index = False
            db = connect(uri(p, "ro", immutable=True), self.timeout_s)
            header = read_header(db)
        try:
            judge(header, p)
        except BaseException:
            self.close(db)
            raise
        return db, header

    def peek(self) -> None:
        """Refuse what is not a pgknee store (or is a newer one), changing nothing."""
        db, _ = self.open()
        self.close(db)

    def close(self, db: sqlite3.Connection) -> None:
        db.close()
        if self.made_index:
            tidy(self.path)


def tidy(path: Path) -> None:
    """Let SQLite remove the empty -wal and the -shm a reader made (nothing else is open)."""
    wal = Path(f"{path}-wal")
    try:
        if not wal.exists() or wal.stat().st_size != 0 or not os.access(path, os.W_OK) \
                or not os.access(path.parent, os.W_OK | os.X_OK):
            return
        with contextlib.closing(connect(uri(path, "rw"), 0)) as db:
            db.execute("PRAGMA query_only = ON")
            db.execute(load("sqlite_objects")).fetchone()
    except (OSError, sqlite3.Error):
        return
