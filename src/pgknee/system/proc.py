"""The one place that starts child processes.

A child gets the environment built for it (base_env when none is given: never pgknee's
own, which may hold PGPASSWORD, a PGKNEE_*_DSN or a CI runner's secrets). Every child
runs in its own session (so a terminal's Ctrl-C reaches only pgknee,
which then stops the children in order), is tracked, and is stopped by
escalating signals to its whole process group: TERM (or the signal given),
then KILL. No child outlives pgknee, whatever the exit path.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any

from pgknee.base.clock import polling
from pgknee.system import registry

_live: set[subprocess.Popen[bytes]] = set()


@dataclass(frozen=True)
class RunAs:
    """Start a child as another user (the embedded server when pgknee runs as root)."""

    uid: int
    gid: int
    name: str

    def popen_args(self) -> dict[str, Any]:
        """Popen's arguments that start the child as this user, with none of pgknee's groups."""
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
    stdin: int | None = subprocess.DEVNULL,
    run_as: RunAs | None = None,
    cpus: frozenset[int] | None = None,
    die_with_parent: int | None = signal.SIGKILL,
    group: bool | None = None,
) -> subprocess.Popen[bytes]:
    """Start a child in a new session and remember it until it is reaped; `cpus` pins it
    (and every thread it starts) to those CPUs. The kernel sends it `die_with_parent` when
    pgknee dies (PR_SET_PDEATHSIG: SIGKILL for pgbench, SIGINT for a server, a clean shutdown;
    None for one that must outlive pgknee). The registry stops its whole process group when
    `group` (by default, for one killed with pgknee: pgbench's); pgpool's children outlive a main
    process that crashed, so it asks for it too. Call it from the main thread: the signal follows
    the death of the thread that started the child."""
    check_stop()  # a stop signal whose exception was lost: nothing new starts
    # the stop signals wait until the child is started and recorded: one raised in the fork's own
    # callbacks is only printed by Python ("Exception ignored in _releaseLock"), and one between the
    # start and the record would leave a child nobody stops
    with deferred():
        p = subprocess.Popen(  # noqa: S603 - argv is built by pgknee, never a shell
            list(argv),
            env=dict(env) if env is not None else base_env(),
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            stdin=stdin,
            start_new_session=True,
            **(run_as.popen_args() if run_as else {}),  # else as pgknee's own user and groups
            preexec_fn=_in_child(cpus, die_with_parent, os.getpid()),  # noqa: PLW1509 - no locks taken
        )
        _live.add(p)
        registry.current().child(os.path.basename(argv[0]), p.pid, _STOP_BY_SIGNAL.get(die_with_parent, "fast"),
                                 group=die_with_parent == signal.SIGKILL if group is None else group)
    return p


def cpus_said(cpus: frozenset[int] | None) -> str:
    """The CPUs a child is pinned to (spawn's `cpus`) as its settings say them: 'any' when not pinned."""
    return ",".join(map(str, sorted(cpus))) if cpus else "any"


_PR_SET_PDEATHSIG = 1
# how the registry's watchdog stops a child if pgknee dies: as the kernel would, and a child that
# is to outlive pgknee (--keep) with a fast shutdown until it is released
_STOP_BY_SIGNAL: dict[int | None, str] = {signal.SIGKILL: "kill", signal.SIGINT: "fast", signal.SIGTERM: "term"}


def _in_child(cpus: frozenset[int] | None, signum: int | None, parent: int) -> Callable[[], None] | None:
    """What the child does before exec (after it took its user): its CPUs, and the signal that
    follows pgknee's death; if pgknee died before the child could ask for it, it exits."""
    if cpus is None and signum is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True) if signum is not None else None

    def before_exec() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)
        if libc is not None:
            libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
            if os.getppid() != parent:
                os._exit(1)

    return before_exec


def base_env() -> dict[str, str]:
    """What every child gets: a PATH (a \\shell in a pgbench script needs one) and the C locale
    (pgknee parses what its children print)."""
    return {"PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}


def _signal_group(p: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, sig)


def stop(p: subprocess.Popen[bytes], *, first: int = signal.SIGTERM, grace: float = 5.0) -> int | None:
    """Stop a child and its group: `first`, wait `grace` seconds, then SIGKILL."""
    if p.poll() is None:
        _signal_group(p, first)
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5.0)
    # the leader may be gone while grandchildren linger in its group
    _signal_group(p, signal.SIGKILL)
    _forget(p)
    return p.returncode


def reap(p: subprocess.Popen[bytes]) -> None:
    """Forget a child that exited by itself (after its group is checked empty)."""
    _signal_group(p, signal.SIGKILL)
    _forget(p)


def release(p: subprocess.Popen[bytes]) -> None:
    """Let a child outlive pgknee on purpose (an embedded server kept with --keep): nobody waits
    for it. Its returncode set is Popen's own mark of that (not its exit status): collected, the
    Popen would say "subprocess is still running", at the latest when Python exits."""
    _forget(p)
    p.returncode = 0


def _forget(p: subprocess.Popen[bytes]) -> None:
    _live.discard(p)
    registry.current().forget_child(p.pid)


def stop_all() -> None:
    """Last resort at interpreter exit: nothing started by pgknee survives it."""
    for p in list(_live):
        stop(p, grace=2.0)


atexit.register(stop_all)


@contextlib.contextmanager
def guarded(p: subprocess.Popen[bytes], *, first: int = signal.SIGTERM, grace: float = 5.0) -> Iterator[
    subprocess.Popen[bytes]
]:
    """Kill the child's group if an exception escapes the block."""
    try:
        yield p
    finally:
        stop(p, first=first, grace=grace)


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    run_as: RunAs | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a short command to completion (bounded), capturing text output."""
    p = spawn(argv, env=env, run_as=run_as, cwd=cwd)
    with guarded(p):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(p)
            out, err = p.communicate()
            return subprocess.CompletedProcess(list(argv), 124, out.decode(errors="replace"),
                                               err.decode(errors="replace") + f"\n(timed out after {timeout:.0f} s)")
    return subprocess.CompletedProcess(list(argv), p.returncode, out.decode(errors="replace"),
                                       err.decode(errors="replace"))


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
Handler = Callable[[int, FrameType | None], Any] | int


@dataclass
class _Pending:
    signum: int
    handler: Handler
    exception: Callable[[], BaseException]


_pending: _Pending | None = None  # the last stop signal a `raising` handler took, until it is handled


def raising(make: Callable[[str], BaseException]) -> Handler:
    """A signal handler that raises `make(signal name)` in the main thread, and remembers it: an
    exception raised at an arbitrary point can land where Python only prints it ("Exception
    ignored in" an at-fork, weakref or finaliser callback: seen, a SIGTERM as a child was forked,
    the run then going on to its end). check_stop() raises it again at pgknee's own points."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        global _pending
        name = signal.Signals(signum).name
        _pending = _Pending(signum, handler, lambda: make(name))
        raise make(name)
    return handler


def check_stop() -> None:
    """Raise once more the exception of a stop signal taken by a `raising` handler and not yet
    handled (stop_handled); only in the main thread, and only while that handler is in force (not
    in a cleanup that ignores the signals, nor in a deferred block)."""
    global _pending
    p = _pending
    if p is None or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(p.signum) is not p.handler:
        return
    _pending = None
    raise p.exception()


def stop_handled() -> None:
    """The stop signal's exception reached the code that ends the command in order."""
    global _pending
    _pending = None


@contextlib.contextmanager
def signals(handler: Handler, which: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Handle the stop signals with `handler` (or signal.SIG_IGN, so that a cleanup of bounded
    steps is not cut short by a second Ctrl-C) inside the block; restore them after."""
    old = {s: signal.signal(s, handler) for s in which}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def deferred(which: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """The stop signals held while a block that must not be cut in half runs (a step's results
    being written, or put in a side file). When it ends, the first signal that came is handled as
    it would have been; if the block failed, its error ends the run and says more (where the step
    went), so the signal has nothing left to add. Outside the main thread the block just runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, _frame: got.append(signum)) for s in which}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if got:
        handler = old[got[0]]
        if callable(handler):
            handler(got[0], None)
        elif handler == signal.SIG_DFL:
            os.kill(os.getpid(), got[0])


def wait_until(predicate: Callable[[], object], *, timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate()` until true or timeout; no bare sleeps in callers."""
    return any(predicate() for _ in polling(timeout, interval))


def wait_answering(p: subprocess.Popen[bytes], answers: Callable[[], object], *, timeout: float) -> bool | None:
    """A child just started, until it `answers` or exits, `timeout` at the most: True when it
    answers; False when it exited (reaped here: the caller may start it again); None when it did
    neither in time (still running: the caller stops it and says so)."""
    ready = wait_until(lambda: p.poll() is not None or answers(), timeout=timeout)
    if p.poll() is not None:
        reap(p)
        return False
    return True if ready else None


# ---- Ctrl-C in the read commands: never swallowed ---------------------------------------------
# A KeyboardInterrupt raised inside an import can be swallowed by importlib's bookkeeping
# ("Exception ignored in ...", CPython gh-82272), and the command then runs on to its end as if no
# Ctrl-C had come. The handler below also remembers that one came: the command checks before it
# writes its output and when it returns, and ends as interrupted (exit 130, nothing written).
_ctrl_c = threading.Event()


def _on_ctrl_c(signum: int, frame: FrameType | None) -> None:
    _ctrl_c.set()
    signal.default_int_handler(signum, frame)


@contextlib.contextmanager
def ctrl_c_remembered() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt as Python's own handler does, and is remembered
    (check_ctrl_c); the previous handler comes back afterwards. Outside the main thread: nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _ctrl_c.clear()
    old = signal.signal(signal.SIGINT, _on_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def check_ctrl_c() -> None:
    """KeyboardInterrupt when a Ctrl-C came, even one whose exception something swallowed."""
    if _ctrl_c.is_set():
        raise KeyboardInterrupt
