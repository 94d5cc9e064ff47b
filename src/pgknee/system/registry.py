"""Everything pgknee starts, written down as it starts: a registry entry per pgknee process (a
JSON file in a private state directory) listing its children (pid, start time, what they are,
how to stop them), its directories and the runs it is writing; and a watchdog, started with
the first of them, that reads the same facts through a pipe and, if pgknee dies without saying
'done', stops the children cleanly, removes the directories and marks the runs abandoned.

Every pgknee command sweeps the entries of pgknee processes that are gone (a pid counts as
the recorded process only when its start time matches), and `pgknee cleanup` does it on demand.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from pgknee.base import sqlfiles
from pgknee.base.clock import now_iso, polling

# how a child is stopped: pgbench killed; a server told to shut down fast; pgbouncer to close
STOPS = {"kill": signal.SIGKILL, "fast": signal.SIGINT, "term": signal.SIGTERM}


def state_dir() -> Path:
    """Where registry entries live: $PGKNEE_STATE_DIR, or $XDG_STATE_HOME/pgknee, or
    ~/.local/state/pgknee; private (0700)."""
    env = os.environ.get("PGKNEE_STATE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "pgknee"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    return base


def start_time(pid: int) -> str | None:
    """A process's start time (clock ticks since boot, /proc/PID/stat field 22): with the pid,
    it tells the recorded process from a later one that got the same pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # a zombie has died: only its parent has not looked yet
        return None
    return fields[19]


def is_alive(pid: int, start: str | None) -> bool:
    return start is not None and start_time(pid) == start


def group_left(pgid: int, start: str) -> list[int]:
    """The live members of the process group a recorded leader (pid `pgid`, started at `start`)
    led, after the leader itself may be gone (a parent-death signal kills the leader only, a
    shell's background job stays). Linux gives no new process a pid still in use as a group id,
    so the group is the leader's while any member lives; members started before the leader are
    not its own and are left alone, and if the pid now runs another process, nothing is the
    leader's."""
    now = start_time(pgid)
    if now is not None and now != start:
        return []
    left = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        live = len(fields) > 19 and fields[0] not in ("Z", "X")
        if live and int(fields[2]) == pgid and int(fields[19]) >= int(start):
            left.append(int(d))
    return left


@dataclass
class Child:
    kind: str  # 'postgres', 'pgbouncer', 'pgbench', ...
    pid: int
    start: str
    stop: str  # a key of STOPS
    group: bool  # stop its process group (pgbench's threads' clients live in it)


@dataclass
class Entry:
    pid: int
    start: str
    host: str
    argv: list[str]
    created: str
    watchdog: tuple[int, str] | None = None
    children: list[Child] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    runs: list[tuple[str, str]] = field(default_factory=list)  # (store path, run_id)


class Registry:
    """This process's entry and its watchdog."""

    def __init__(self) -> None:
        me = os.getpid()
        self.entry = Entry(me, start_time(me) or "0", socket.gethostname(), _safe_argv(), now_iso())
        self.path = state_dir() / f"pgknee-{me}-{self.entry.start}.json"
        self._pipe: IO[str] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    # ---- what pgknee started -------------------------------------------------------------------
    def child(self, kind: str, pid: int, stop: str, *, group: bool = False) -> None:
        start = start_time(pid)
        if start is None:
            return
        c = Child(kind, pid, start, stop, group)
        self.entry.children.append(c)
        self._save({"op": "child", **asdict(c)})

    def forget_child(self, pid: int) -> None:
        before = len(self.entry.children)
        self.entry.children = [c for c in self.entry.children if c.pid != pid]
        if len(self.entry.children) != before:
            self._save({"op": "forget-child", "pid": pid})

    def directory(self, path: Path) -> None:
        self.entry.dirs.append(str(path))
        self._save({"op": "dir", "path": str(path)})

    def forget_directory(self, path: Path) -> None:
        if str(path) in self.entry.dirs:
            self.entry.dirs.remove(str(path))
            self._save({"op": "forget-dir", "path": str(path)})

    def run(self, store: Path, run_id: str) -> None:
        self.entry.runs.append((str(store.resolve()), run_id))
        self._save({"op": "run", "store": str(store.resolve()), "run_id": run_id})

    def forget_run(self, run_id: str) -> None:
        self.entry.runs = [r for r in self.entry.runs if r[1] != run_id]
        self._save({"op": "forget-run", "run_id": run_id})

    def close(self) -> None:
        """pgknee is done with everything it started: the watchdog exits without acting."""
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                self._pipe.write(json.dumps({"op": "done"}) + "\n")
                self._pipe.close()
            self._pipe = None
        if self._watchdog is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(timeout=5)
            self._watchdog = None
        self.path.unlink(missing_ok=True)

    # ---- the entry and the watchdog ------------------------------------------------------------
    def _save(self, message: dict[str, Any]) -> None:
        self._ensure_watchdog()
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(self.entry), f)
        os.replace(tmp, self.path)
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                self._pipe.write(json.dumps(message) + "\n")
                self._pipe.flush()

    def _ensure_watchdog(self) -> None:
        if self._pipe is not None:
            return
        read, write = os.pipe()
        self._watchdog = subprocess.Popen(  # noqa: S603 - pgknee's own module
            [sys.executable, "-m", "pgknee.system.watchdog", str(self.path)], stdin=read, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join(sys.path)})
        os.close(read)
        self._pipe = os.fdopen(write, "w")
        wd = self._watchdog.pid
        self.entry.watchdog = (wd, start_time(wd) or "0")


_current: Registry | None = None


def current() -> Registry:
    """This process's registry, made when something is first recorded."""
    global _current
    if _current is None or _current.entry.pid != os.getpid():
        _current = Registry()
    return _current


def close() -> None:
    """The end of a pgknee command: whatever it started is stopped by now."""
    global _current
    if _current is not None:
        _current.close()
        _current = None


def _safe_argv() -> list[str]:
    """The command line, with anything that may be a password left out: only its first words."""
    return [a if not any(c in a for c in "@=:") else "..." for a in sys.argv[:6]]


# ---- the sweep ---------------------------------------------------------------------------------
def sweep() -> list[str]:
    """Clean up after pgknee processes that died (their watchdog gone too): stop what they
    started that still runs as recorded, remove their directories, mark their runs abandoned.
    Returns what was done, a line each."""
    done: list[str] = []
    for path in sorted(state_dir().glob("pgknee-*.json")):
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if entry.get("pid") == os.getpid() or is_alive(entry["pid"], entry.get("start")):
            continue
        wd = entry.get("watchdog")
        if wd and is_alive(wd[0], wd[1]):
            continue  # its watchdog is cleaning up now
        done += clean_up(entry, f"pgknee (pid {entry['pid']}) died; found by a sweep at {now_iso()}")
        path.unlink(missing_ok=True)
    return done


def clean_up(entry: dict[str, Any], reason: str) -> list[str]:
    """Stop, remove and mark what an entry of a dead pgknee lists (the watchdog's job too)."""
    done = []
    for c in reversed(entry.get("children", [])):
        if is_alive(c["pid"], c["start"]) or (c["group"] and group_left(c["pid"], c["start"])):
            stop_process(c["pid"], STOPS[c["stop"]], group=c["group"], start=c["start"])
            done.append(f"stopped {c['kind']} (pid {c['pid']})")
    for d in entry.get("dirs", []):
        if os.path.basename(d).startswith("pgknee-") and os.path.isdir(d):
            shutil.rmtree(d, ignore_errors=True)
            done.append(f"removed {d}")
    owner = f"{entry.get('host')}:{entry.get('pid')}:{entry.get('start')}"  # as the store's writer spells it
    for store, run_id in entry.get("runs", []):
        if mark_abandoned(store, run_id, reason, owner):
            done.append(f"marked run {run_id} in {store} abandoned")
    return done


def stop_process(pid: int, first: int, *, group: bool, start: str | None = None, grace: float = 15.0) -> None:
    """`first`, then (after `grace` s) SIGQUIT for a server's immediate shutdown, then SIGKILL.
    With `group` (and the leader's recorded `start`), to its whole process group, until no
    member of it is left, even when the leader itself is already gone."""
    start = start or start_time(pid)
    if start is None:
        return

    def gone() -> bool:
        return start_time(pid) != start and not (group and group_left(pid, start))

    for sig, wait in ((first, grace), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
        if gone():  # checked before every signal: a pid now another process's is never signalled
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig) if group else os.kill(pid, sig)
        if any(gone() for _ in polling(wait, 0.1)):
            return


def mark_abandoned(store: str, run_id: str, reason: str, owner: str) -> bool:
    """A run still 'running' whose pgknee (`owner`) is gone: 'abandoned', its unfinished steps
    interrupted. A run another pgknee took over meanwhile (--resume) is left to it."""
    if not os.path.isfile(store):
        return False
    def sql(name: str) -> str:  # the store's own statements, read through the one loader (its package is light)
        return sqlfiles.text("pgknee.store.sql", name)

    try:
        with contextlib.closing(sqlite3.connect(store, timeout=10, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")
            cur = db.execute(sql("abandon_run"), {"run_id": run_id, "reason": reason,
                                                                     "at": now_iso(), "owner": owner})
            if cur.rowcount > 0:
                db.execute(sql("abandon_steps"), {"run_id": run_id, "reason": reason})
            db.execute("COMMIT")
            return cur.rowcount > 0
    except sqlite3.Error:
        return False
