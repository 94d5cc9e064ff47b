"""How a step's figures were got, as typed records, one per source: the quiet wait before it, its
idle sessions, the memory pictures, its network, its relay's end, the warm-up, the measured
window and its steadiness, its agents, the settings it ran with, and whether the server restarted
or the pooler died. run.step gathers them on a `FactsDraft` while the step runs; the StepResult
holds them frozen as `StepFacts`.

The store keeps them as name/value rows (step_facts, names from keys.StepFact): each record says
its own rows (`items`) and is read back from them (`of_items`), so a side file or a stored run
gives the same records. A figure a record does not have is None, and is then not stored."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import ClassVar, TypeVar, cast

from pgknee.model import keys
from pgknee.model.keys import StepFact
from pgknee.model.server import as_field

Items = Iterator[tuple[str, float]]


class _Record:
    """The stored form of a record whose fields each have one fact name (`NAMES`, in field
    order): a None field is not stored; a bool is stored as 1 and read back from any non-zero."""

    NAMES: ClassVar[tuple[str, ...]] = ()

    def items(self) -> Items:
        for f, name in zip(fields(self), self.NAMES, strict=True):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is not None:
                yield name, float(value)

    @classmethod
    def of_items(cls: type[F], d: Mapping[str, float]) -> F | None:
        """The record from a step's stored facts; None when none of its names is there."""
        if not any(name in d for name in cls.NAMES):
            return None
        return cls(**{f.name: as_field(f, d.get(name))
                      for f, name in zip(fields(cls), cls.NAMES, strict=True)})  # type: ignore[arg-type]


F = TypeVar("F", bound=_Record)


@dataclass(frozen=True, slots=True)
class QuietWait(_Record):
    """The 'pre' phase: how long the server took to be quiet (the last step's backends gone, no
    immediate checkpoint running), at most --pre."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.QUIET_WAIT_S, StepFact.QUIET_BACKENDS_LEFT,
                                        StepFact.QUIET_IMMEDIATE_CHECKPOINT, StepFact.QUIET_SPREAD_CHECKPOINT)

    waited_s: float
    backends_left: int | None = None  # the last step's pgbench backends still there at --pre's end
    immediate_checkpoint: bool | None = None  # one was still running when the wait ended
    spread_checkpoint: bool | None = None  # one was running then (not waited for)


@dataclass(frozen=True, slots=True)
class IdleSessions(_Record):
    """The variant's idle sessions: how many opened, how long that took, how many were still
    open at the step's end."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.IDLE_OPENED, StepFact.IDLE_OPEN_S, StepFact.IDLE_OPEN_AT_END)

    opened: int
    open_s: float
    open_at_end: int | None = None


@dataclass(frozen=True, slots=True)
class MemoryPicture(_Record):
    """The machine's memory (/proc/meminfo, kB) and, with a server on this machine, its processes'
    proportional set size (collect.memory); taken before the idle sessions open and at the end."""

    PREFIX: ClassVar[str] = ""
    FIELDS: ClassVar[tuple[str, ...]] = (keys.MEM_AVAILABLE, keys.MEM_FREE, keys.MEM_CACHED, keys.MEM_SHMEM,
                                         keys.PSS_SERVER, keys.PSS_SERVER_PROCESSES, keys.PSS_IDLE_MEAN,
                                         keys.PSS_IDLE_BACKENDS)

    mem_available_kb: float | None = None
    mem_free_kb: float | None = None
    mem_cached_kb: float | None = None
    mem_shmem_kb: float | None = None
    pss_server_kb: float | None = None
    pss_server_processes: int | None = None
    pss_idle_backend_mean_kb: float | None = None
    pss_idle_backends: int | None = None


@dataclass(frozen=True, slots=True)
class MemoryBeforeIdle(MemoryPicture):
    PREFIX: ClassVar[str] = keys.BEFORE_IDLE
    NAMES: ClassVar[tuple[str, ...]] = tuple(keys.memory_fact(keys.BEFORE_IDLE, k) for k in MemoryPicture.FIELDS)


@dataclass(frozen=True, slots=True)
class MemoryAtEnd(MemoryPicture):
    PREFIX: ClassVar[str] = keys.AT_END
    NAMES: ClassVar[tuple[str, ...]] = tuple(keys.memory_fact(keys.AT_END, k) for k in MemoryPicture.FIELDS)


@dataclass(frozen=True, slots=True)
class Network(_Record):
    """The round trip pgbench waits for, probed before the step on its path (through the relay
    when the variant simulates a hop; the agents' own, weighted by their clients, when agents ran
    it), ms; the direct path's; what the relay added; the round trips of a transaction."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.NET_ROUND_TRIPS, StepFact.NET_RTT_MS, StepFact.NET_RTT_P99_MS,
                                        StepFact.NET_RTT_MIN_MS, StepFact.NET_DIRECT_RTT_MS,
                                        StepFact.NET_RELAY_ADDED_MS)

    round_trips_per_txn: float | None = None
    rtt_ms: float | None = None  # median
    rtt_p99_ms: float | None = None
    rtt_min_ms: float | None = None
    direct_rtt_ms: float | None = None  # the median without the relay
    relay_added_ms: float | None = None  # through the relay less direct (asked rtt + the relay's own cost)


@dataclass(frozen=True, slots=True)
class RelayEnd(_Record):
    """What the step's relay said of itself at the end (chunks sent later than asked, its CPU),
    and, when it was gone by then, the code it exited with or the signal that killed it."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.NET_RELAY_LATE_MEAN_MS, StepFact.NET_RELAY_LATE_P99_MS,
                                        StepFact.NET_RELAY_CPU_PCT, StepFact.NET_RELAY_EXIT_CODE,
                                        StepFact.NET_RELAY_SIGNAL)

    late_mean_ms: float | None = None
    late_p99_ms: float | None = None
    cpu_pct: float | None = None  # % of one core over the relay's life
    exit_code: int | None = None
    signal: int | None = None

    @property
    def death(self) -> str | None:
        """How it died ('signal 9', 'exit code 1'), or None if it did not."""
        if self.signal is not None:
            return f"signal {self.signal}"
        if self.exit_code is not None:
            return f"exit code {self.exit_code}"
        return None


@dataclass(frozen=True, slots=True)
class Warmup(_Record):
    """The unmeasured run before the bench (the plan's warm-up, or the probe that tells a
    variant's first TPS): its transactions (the workload's books count them), the probe's TPS."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.WARMUP_TRANSACTIONS, StepFact.PROBE_TPS)

    transactions: int | None = None
    probe_tps: float | None = None


@dataclass(frozen=True, slots=True)
class Measured(_Record):
    """The measured window: pgbench's (a --duration auto step's actual length), the share of
    transactions its log kept for the latency, how many successful ones that gave, and pgknee's
    own commits in the benchmark database meanwhile (pg_stat_database counts them too)."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.BENCH_SECONDS, StepFact.LOG_SAMPLING_RATE,
                                        StepFact.LOG_TRANSACTIONS, StepFact.OWN_COMMITS)

    bench_seconds: float
    log_sampling_rate: float
    log_transactions: int | None = None
    own_commits: int | None = None


@dataclass(frozen=True, slots=True)
class Steadiness(_Record):
    """pgbench's progress judged steady (MSER-5): the warm-up it cut, the mean TPS after it, its
    95% interval's half-width as a % of the mean."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.STEADY_WARMUP_S, StepFact.STEADY_TPS,
                                        StepFact.STEADY_HALFWIDTH_PCT)

    warmup_s: float
    tps: float
    halfwidth_pct: float


@dataclass(frozen=True, slots=True)
class AutoDuration(_Record):
    """A --duration auto step: whether it stopped once steady or ran to its maximum, and when the
    interval first was within the target."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.STEADY_STOPPED, StepFact.STEADY_AT_S)

    stopped: bool
    steady_at_s: float | None = None


@dataclass(frozen=True, slots=True)
class Agents(_Record):
    """A step run by agents (run/distributed.py): how many ran it, how many died or stopped
    answering during it."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.AGENTS, StepFact.AGENTS_LOST)

    count: int
    lost: int | None = None


@dataclass(frozen=True, slots=True)
class Faults(_Record):
    """What ended the step from outside pgbench: the server restarted (or failed over, or could
    not be reached) during it; the step's pgbouncer died."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.SERVER_RESTARTED, StepFact.POOLER_DIED)

    server_restarted: bool | None = None
    pooler_died: bool | None = None


@dataclass(frozen=True, slots=True)
class ActivityGaps(_Record):
    """What pg_stat_activity's sampling missed in the step: ticks without a connection, its
    reconnections, the interval it ended at (longer than the plan's: it slowed), ticks that began
    late. Written by the store's writer from the step's ActivitySamples, each only when not 0."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.ACTIVITY_TICKS_LOST, StepFact.ACTIVITY_RECONNECTS,
                                        StepFact.ACTIVITY_INTERVAL_S, StepFact.ACTIVITY_TICKS_LATE)

    ticks_lost: int | None = None
    reconnects: int | None = None
    interval_s: float | None = None
    ticks_late: int | None = None


@dataclass(frozen=True, slots=True)
class KcacheBefore16(_Record):
    """pg_stat_kcache's figures as runs before format 16 kept them, among the step's facts (since,
    a record of their own: model.server.KcacheStep)."""

    NAMES: ClassVar[tuple[str, ...]] = (StepFact.KCACHE_USER_S, StepFact.KCACHE_SYSTEM_S,
                                        StepFact.KCACHE_READ_BYTES, StepFact.KCACHE_WRITE_BYTES)

    user_s: float | None = None
    system_s: float | None = None
    read_bytes: float | None = None
    write_bytes: float | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    """The settings the variant ran with, as the server took them (read after its restart)."""

    values: tuple[tuple[str, float], ...]

    def items(self) -> Items:
        for name, value in self.values:
            yield keys.setting(name), value

    @classmethod
    def of_items(cls, d: Mapping[str, float]) -> Settings | None:
        got = tuple((k[len(keys.SETTING):], v) for k, v in d.items() if k.startswith(keys.SETTING))
        return cls(got) if got else None


@dataclass(frozen=True, slots=True)
class Unread:
    """Facts a stored run has under names no record reads (an older release's, such as the quiet
    wait's one quiet.checkpoint or net.relay_died): kept as they were, so that nothing stored is
    lost on the way to the JSON or a copy."""

    values: tuple[tuple[str, float], ...]

    def items(self) -> Items:
        yield from self.values

    @classmethod
    def of_items(cls, d: Mapping[str, float]) -> Unread | None:
        return None  # what is left once every kind has read its names (StepFacts.of_items)


Record = (QuietWait | IdleSessions | MemoryBeforeIdle | MemoryAtEnd | Network | RelayEnd | Warmup | Measured
          | Steadiness | AutoDuration | Agents | Faults | Settings | ActivityGaps | KcacheBefore16 | Unread)
KINDS: tuple[type[Record], ...] = (QuietWait, IdleSessions, MemoryBeforeIdle, MemoryAtEnd, Network, RelayEnd, Warmup,
                                   Measured, Steadiness, AutoDuration, Agents, Faults, Settings, ActivityGaps,
                                   KcacheBefore16)
R = TypeVar("R", bound=Record)


@dataclass(frozen=True)
class StepFacts:
    """A step's fact records, at most one of each kind."""

    records: tuple[Record, ...] = ()

    def of(self, kind: type[R]) -> R | None:
        return next((r for r in self.records if type(r) is kind), None)

    def setting(self, name: str) -> float | None:
        """A setting the variant ran with, as the server took it."""
        settings = self.of(Settings)
        return next((v for k, v in settings.values if k == name), None) if settings is not None else None

    def items(self) -> Items:
        """The stored form: (name, value) rows."""
        for r in self.records:
            yield from r.items()

    @classmethod
    def of_items(cls, d: Mapping[str, float]) -> StepFacts:
        """The records of a step's stored facts (a side file's, a stored run's); names no record
        reads are kept as they were (Unread)."""
        records: list[Record] = [r for kind in KINDS if (r := kind.of_items(d)) is not None]
        if unread := tuple((k, v) for k, v in d.items() if not _known(k)):
            records.append(Unread(unread))
        return cls(tuple(records))


def _known(name: str) -> bool:
    """A name some record reads (a record's None fields are not stored, so not read back either)."""
    return name.startswith(keys.SETTING) or any(name in kind.NAMES for kind in KINDS if issubclass(kind, _Record))


class FactsDraft:
    """A step's records as they are gathered (a later record of a kind takes its place)."""

    def __init__(self, *records: Record | None) -> None:
        self._by_kind: dict[type[Record], Record] = {}
        for r in records:
            self.add(r)

    def add(self, record: Record | None) -> None:
        if record is not None:
            self._by_kind[type(record)] = record

    def of(self, kind: type[R]) -> R | None:
        return cast("R | None", self._by_kind.get(kind))  # type: ignore[arg-type]  # (keyed by its type)

    def freeze(self) -> StepFacts:
        return StepFacts(tuple(self._by_kind.values()))
