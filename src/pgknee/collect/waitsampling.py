"""pg_wait_sampling as a second wait source: the extension's profile (per pid and wait event,
sampled inside the server every profile_period ms) read once at a step's bench start and once
at its end, diffed, and kept for the benchmark's backends only (the pids pgknee's
pg_stat_activity sampler saw as client backends in the bench phase). Two queries a step.

Its traps (docs/aas.md, section 4): version 1.1 skips processes with no wait event, so it has
no CPU and cannot tell idle from idle-in-transaction time (compare per wait event only, not CPU
or Client); profile_pid must be on to tell the benchmark's backends apart; the collector's real
period is longer than profile_period (10.2-10.5 ms for 10 ms here), so the probes are counted on
a reference session that sleeps in pg_sleep all along (its Timeout:PgSleep count is the number
of probes) in another database than the benchmark's, so that its time is not in the benchmark
database's statistics. Without such a session the probes are assumed from profile_period, and
the step says so.

pgknee creates the extension only on its embedded server; on a user's server it reads it when
it is there and says how to enable it when not."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import psycopg

from pgknee.base.errors import Interrupted, PgkneeError, first_line
from pgknee.collect import queries
from pgknee.collect.protocol import PROFILE, Hooks, Phase, StepProcesses
from pgknee.model.samples import WaitSampling
from pgknee.targets.base import Endpoint

EXTENSION = "pg_wait_sampling"
REFERENCE_EVENT = ("Timeout", "PgSleep")
REFERENCE_DB = "postgres"
HOW_TO_ENABLE = ("add pg_wait_sampling to shared_preload_libraries, set pg_wait_sampling.profile_pid = on, "
                 "restart, and CREATE EXTENSION pg_wait_sampling in the benchmark's database or 'postgres'")

Profile = dict[tuple[int, str, str], int]


# ---- the arithmetic (pure) ------------------------------------------------------------------------

def profile_diff(before: Profile, after: Profile) -> Profile:
    """Counts added between two reads (an entry new in `after` counts from 0; a reset in between
    would give negatives, which are dropped)."""
    out = {k: n - before.get(k, 0) for k, n in after.items()}
    return {k: n for k, n in out.items() if n > 0}


def probes_of(diff: Profile, reference_pid: int) -> int:
    """The collector's probes in the window: the count of a session asleep in pg_sleep all along."""
    return diff.get((reference_pid, *REFERENCE_EVENT), 0)


def assumed_probes(window_s: float, period_ms: float) -> int:
    return int(window_s * 1000.0 / period_ms) if period_ms > 0 else 0


def events_of(diff: Profile, pids: Iterable[int]) -> tuple[tuple[str, str, int], ...]:
    """(type, event, count) of `pids`, the largest first."""
    keep = frozenset(pids)
    counts: Counter[tuple[str, str]] = Counter()
    for (pid, etype, event), n in diff.items():
        if pid in keep:
            counts[(etype, event)] += n
    return tuple((t, e, n) for (t, e), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def step_profile(before: Profile, after: Profile, window_s: float, pids: frozenset[int],
                 reference_pid: int | None, period_ms: float) -> WaitSampling:
    diff = profile_diff(before, after)
    counted = probes_of(diff, reference_pid) if reference_pid is not None else 0
    probes = counted or assumed_probes(window_s, period_ms)
    return WaitSampling(probes, counted > 0, window_s, len(pids), events_of(diff, pids))


# ---- reading it ---------------------------------------------------------------------------------

@dataclasses.dataclass
class _Reference:
    """A session asleep in pg_sleep in another database, in a thread of its own."""

    conn: psycopg.Connection[Any]
    pid: int
    thread: threading.Thread

    def alive(self) -> bool:
        return self.thread.is_alive() and not self.conn.closed


class WaitProfiler(Hooks):
    """Reads the profile around a step's bench phase (`begin`, `end`) and makes the step's
    record (`result`). A failure never fails the step: the step has no second profile.

    As collect.protocol's Collector (`find`) it looks, when taken, for where the extension is and
    opens its sessions then (before the server's connections are counted); it reads as the bench
    phase begins and as the post phase begins, and its record is the profile of the benchmark's
    backends (the step's, as pg_stat_activity's sampler found them)."""

    name = "waits"
    order = PROFILE

    def __init__(self, endpoint: Endpoint, reference: Endpoint | None, period_ms: float,
                 say: Callable[[str], None] = lambda _: None, *, in_bench_db: bool = False) -> None:
        self.endpoint = endpoint  # the database where the extension is
        self.in_bench_db = in_bench_db  # its reads then are commits there, which the step's check counts
        self.queries_run = 0
        self.reference_endpoint = reference
        self.period_ms = period_ms
        self.say = say
        self.errors: list[str] = []
        self._conn: psycopg.Connection[Any] | None = None
        self._ref: _Reference | None = None
        self._before: tuple[float, Profile] | None = None
        self._after: tuple[float, Profile] | None = None
        self.step = StepProcesses(0)
        self.note = "on"  # how it reads: its profile_period, its probes counted or assumed
        self._create: bool | None = None  # `find`'s: the extension is looked for when taken

    @classmethod
    def find(cls, endpoint: Endpoint, *, create: bool, say: Callable[[str], None]) -> WaitProfiler:
        """A profiler of `endpoint`'s server, which finds where pg_wait_sampling is when the run's
        collectors take it (created in pgknee's own 'postgres' database when `create`: the embedded
        server), and is left out, with why, when it is not there or profile_pid is off."""
        profiler = cls(endpoint, None, 10.0, say)
        profiler._create = create
        return profiler

    def available(self) -> str | None:
        if self._create is None:
            return None
        found = _found(self.endpoint, self._create)
        if isinstance(found, str):
            return found
        where, self.reference_endpoint, self.period_ms = found
        self.in_bench_db, self.endpoint = where is self.endpoint, where
        self.note = (f"on, profile_period {self.period_ms:g} ms, probes counted on a session in '{REFERENCE_DB}'"
                     if self.reference_endpoint is not None else f"on, profile_period {self.period_ms:g} ms, "
                     f"probes assumed (no session in '{REFERENCE_DB}' could be held)")
        self.say(f"pg_wait_sampling: {self.note}")
        return None

    def start(self) -> None:
        self.begin()  # its sessions open now, and are counted with the server's connections in use

    def begin_step(self, step: StepProcesses) -> None:
        self._before = self._after = None
        self.step = step

    def set_phase(self, phase: Phase) -> None:
        if phase == "bench":
            self.begin()
        elif phase == "post":
            self.end()

    def end_step(self) -> tuple[WaitSampling, ...]:
        return self.result(self.step.backends)

    def _profile(self) -> Profile:
        """The profile now; on a new session once when the one held was ended (a DBA's
        pg_terminate_backend, an idle-session timeout) since the last read."""
        fresh = self._conn is None or self._conn.closed or self._conn.broken
        if fresh:
            self._conn = self.endpoint.connect("waitprofile")
        assert self._conn is not None
        try:
            self.queries_run += int(self.in_bench_db)
            rows = self._conn.execute(queries.text("wait_sampling_profile")).fetchall()
        except psycopg.OperationalError:
            if fresh:
                raise
            self._conn = None
            return self._profile()
        return {(int(p), str(t), str(e)): int(n) for p, t, e, n in rows}

    def _ensure_reference(self) -> None:
        if self.reference_endpoint is None or (self._ref is not None and self._ref.alive()):
            return
        self._close_reference()
        conn = self.reference_endpoint.connect("waitprofile-reference")
        thread = threading.Thread(target=_sleep, args=(conn,), name="pgknee-wait-reference", daemon=True)
        self._ref = _Reference(conn, int(conn.info.backend_pid), thread)
        thread.start()

    def begin(self) -> None:
        self._before = self._after = None
        try:
            self._ensure_reference()
            self._before = (time.monotonic(), self._profile())
        except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
            raise
        except (psycopg.Error, PgkneeError) as e:
            self._failed(e)

    def end(self) -> None:
        if self._before is None:
            return
        try:
            self._after = (time.monotonic(), self._profile())
        except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
            raise
        except (psycopg.Error, PgkneeError) as e:
            self._failed(e)

    def result(self, pids: frozenset[int]) -> tuple[WaitSampling, ...]:
        """The step's profile of `pids`, if both reads worked and the benchmark had backends (else none)."""
        before, after, self._before, self._after = self._before, self._after, None, None
        if before is None or after is None or not pids:
            return ()
        ref = self._ref.pid if self._ref is not None and self._ref.alive() else None
        return (step_profile(before[1], after[1], after[0] - before[0], pids, ref, self.period_ms),)

    def _failed(self, e: BaseException) -> None:
        why = first_line(e)
        self.errors.append(why)
        with contextlib.suppress(Exception):  # whoever listens, the step goes on
            self.say(f"pg_wait_sampling's profile could not be read ({why}): this step has no second wait profile")
        with contextlib.suppress(psycopg.Error):
            if self._conn is not None:
                self._conn.close()
        self._conn = None

    def _close_reference(self) -> None:
        ref, self._ref = self._ref, None
        if ref is None:
            return
        with contextlib.suppress(psycopg.Error):
            ref.conn.cancel_safe(timeout=2)  # bounded: the server may be unreachable by now
        ref.thread.join(timeout=5)
        with contextlib.suppress(psycopg.Error):
            ref.conn.close()

    def reconnect(self) -> None:
        """After a server restart, between steps: new sessions at the next step."""
        self.close()
        self._conn = None

    def close(self) -> None:
        self._close_reference()
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()


def _sleep(conn: psycopg.Connection[Any]) -> None:
    with contextlib.suppress(psycopg.Error):  # cancelled at the end, or the server went away
        conn.execute(queries.text("sleep_forever"))


# ---- finding it -----------------------------------------------------------------------------------

def _found(endpoint: Endpoint, create: bool) -> tuple[Endpoint, Endpoint | None, float] | str:
    """Where the profile is read, the reference session's database (None when no session can be
    held there) and profile_period; or why the profile cannot serve."""
    other = dataclasses.replace(endpoint, params={**endpoint.params, "dbname": REFERENCE_DB})
    try:
        where = _database_with_extension(endpoint, other, create)
        if where is None:
            return f"{_why_not(endpoint)} ({HOW_TO_ENABLE})"
        with where.connect("setup") as conn:
            period = float(_setting(conn, "pg_wait_sampling.profile_period") or 10)
            if _setting(conn, "pg_wait_sampling.profile_pid") != "on":
                return "pg_wait_sampling.profile_pid is off (it must be on to tell the benchmark apart)"
            conn.execute(queries.text("wait_sampling_readable"))  # loaded, and readable by this role
        return where, (other if _can_connect(other) else None), period
    except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
        raise
    except (psycopg.Error, PgkneeError) as e:
        return first_line(e)


def _setting(conn: psycopg.Connection[Any], name: str) -> str | None:
    """A setting, or None when it does not exist or this role may not read it."""
    try:
        row = conn.execute(queries.text("setting"), (name,)).fetchone()
    except psycopg.errors.InsufficientPrivilege:
        return None
    return str(row[0]) if row and row[0] is not None else None


def _loaded(conn: psycopg.Connection[Any]) -> bool | None:
    """Whether the library is preloaded (None: this role cannot see shared_preload_libraries)."""
    libs = _setting(conn, "shared_preload_libraries")
    return None if libs is None else EXTENSION in [x.strip() for x in libs.replace('"', "").split(",")]


def _why_not(endpoint: Endpoint) -> str:
    with endpoint.connect("setup") as conn:
        loaded = _loaded(conn)
    return "pg_wait_sampling is not loaded" if loaded is False else "the pg_wait_sampling extension is not created"


def _database_with_extension(bench: Endpoint, other: Endpoint, create: bool) -> Endpoint | None:
    """Where the profile can be read: 'postgres' first (so that the reads are not in the
    benchmark database's statistics), then the benchmark's database; the extension created in
    'postgres' only on pgknee's own server."""
    for ep in (other, bench):
        with contextlib.suppress(psycopg.Error, PgkneeError), ep.connect("setup") as conn:
            if create and ep is other and _loaded(conn):
                conn.execute(queries.text("wait_sampling_create"))
            if conn.execute(queries.text("extension_present"), (EXTENSION,)).fetchone():
                return ep
    return None


def _can_connect(ep: Endpoint) -> bool:
    try:
        ep.connect("setup").close()
    except Interrupted:
        raise
    except (psycopg.Error, PgkneeError):
        return False
    return True
