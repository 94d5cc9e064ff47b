"""The validated, frozen description of a run: its target, workload, sweep, variants and
collection. Every record checks itself in __post_init__, so a plan from flags, a plan file or
a stored run passes the same checks; nothing here connects to anything or spawns anything."""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from pgknee.base.errors import UserError
from pgknee.model.rules import DEFAULT_NOISE_PCT, DEFAULT_SUMMARY, PROBE_S, SUMMARIES, check_noise_pct
from pgknee.plan.parse import DEFAULT_CLIENTS
from pgknee.plan.serverconf import check_setting

PROTOCOLS = ("simple", "extended", "prepared")
POOL_MODES = ("session", "transaction", "statement")
IDLE_KINDS = {
    "quiet": "connected, then nothing",
    "catalog": "each listed information_schema's tables and read a row of each, then nothing",
    "sleep": "each running SELECT pg_sleep, active but idle",
}
MAX_IDLE = 20_000
PLACEMENTS = ("any", "server", "client")
POOLER_KINDS = ("managed", "external", "pgpool")
POOLER_AUTH = ("scram-sha-256", "md5")
MAX_POOL = 10_000
MAX_POOLER_PROCESSES = 64  # pgbouncer processes sharing one port (so_reuseport)
MAX_THINK_MS = 60_000.0
MAX_VARIANT_NAME = 100
MAX_RTT_MS = 1000.0  # a simulated network round trip (rtt=) and its jitter


def _whole(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool)


@dataclass(frozen=True)
class PoolerSpec:
    """A pooler in front of the target: a pgbouncer pgknee starts per step ('managed', with this
    mode and pool size), the user's own ('external', reached by --pooler-dsn), or a pgpool-II
    pgknee starts per step ('pgpool': a child per client session, `pool_size` of them)."""

    kind: str = "managed"
    mode: str = "transaction"
    pool_size: int = 20
    reserve: int = 0  # reserve_pool_size: extra server connections after 5 s of waiting
    placement: str = "any"  # the CPUs it runs on: any, the server's, or the client's
    auth: str = "scram-sha-256"  # how clients log in to it; md5 costs the client far less CPU per login
    processes: int = 1  # pgbouncer processes on one port (so_reuseport), each with this pool

    def __post_init__(self) -> None:
        if self.kind not in POOLER_KINDS:
            raise UserError(f"unknown pooler kind {self.kind!r}",
                            "pooled (a pgbouncer pgknee starts), pooled-external or pgpool")
        if self.mode not in POOL_MODES:
            raise UserError(f"unknown pool mode {self.mode!r}", f"choose one of {', '.join(POOL_MODES)}")
        for what, n, low in (("pool", self.pool_size, 1), ("reserve", self.reserve, 0)):
            if not _whole(n) or not low <= n <= MAX_POOL:
                raise UserError(f"{what}={n!r} must be a whole number from {low} to {MAX_POOL}")
        if self.placement not in PLACEMENTS:
            raise UserError(f"unknown placement {self.placement!r}", "placement=server or placement=client")
        if self.auth not in POOLER_AUTH:
            raise UserError(f"unknown auth {self.auth!r}", "auth=scram (the default) or auth=md5")
        if not _whole(self.processes) or not 1 <= self.processes <= MAX_POOLER_PROCESSES:
            raise UserError(f"processes={self.processes!r} must be a whole number from 1 to {MAX_POOLER_PROCESSES}",
                            "for example pooled:transaction:pool=8:processes=2 (pgbouncer processes on one port)")
        if self.processes > 1 and self.kind != "managed":
            raise UserError("processes= sets how many pgbouncer processes pgknee starts; your own pooler runs as "
                            "you run it", "drop processes=, or use 'pooled' for a pgbouncer pgknee manages")

    @property
    def server_connections(self) -> int:
        """The most server connections the pooler may open: each pgbouncer process has its own
        pool; pgpool's children one each, and one more for pgknee's console (pooler/pgpool.py)."""
        if self.kind == "pgpool":
            return self.pool_size + 1
        return self.processes * (self.pool_size + self.reserve)

    def describe(self) -> str:
        if self.kind == "external":
            return "through your pgbouncer (--pooler-dsn)"
        if self.kind == "pgpool":
            return (f"through pgpool-II, pool {self.pool_size} (num_init_children {self.pool_size} + 1 for pgknee's "
                    "console, max_pool 1: a child and its cached server connection per client session)"
                    + (f", pinned to the {self.placement}'s CPUs" if self.placement != "any" else ""))
        text = f"through pgbouncer, {self.mode} mode, pool {self.pool_size}"
        if self.reserve:
            text += f" + reserve {self.reserve}"
        if self.processes > 1:
            text += (f", {self.processes} processes on one port (each its own pool: the server sees up to "
                     f"{self.server_connections} connections)")
        if self.placement != "any":
            text += f", pinned to the {self.placement}'s CPUs"
        if self.auth != "scram-sha-256":
            text += f", {self.auth} logins"
        return text


@dataclass(frozen=True)
class Variant:
    """A named set of differences from the base sweep: the protocol, pipeline mode,
    a new connection per transaction (-C), pacing (rate, think time), a pooler in
    front, idle sessions beside the workers, server settings (a restart)."""

    name: str = "base"
    protocol: str = "prepared"
    pipeline: bool = False
    connect_per_txn: bool = False
    rate: float | None = None  # open loop: a target rate in TPS (pgbench --rate)
    think_ms: float = 0.0  # a pause after each transaction (\\sleep), connection held idle
    pooler: PoolerSpec | None = None
    idle: int = 0  # sessions held open beside the workers for the whole step
    idle_kind: str = "quiet"  # quiet: connected, nothing else; catalog: touched the catalogue; sleep: pg_sleep
    settings: tuple[tuple[str, str], ...] = ()  # embedded server settings for this variant's steps (a restart)
    rtt_ms: float = 0.0  # a simulated network round trip between pgbench and its endpoint (netsim relay)
    rtt_jitter_ms: float = 0.0  # its jitter (standard deviation of the round trip)

    def __post_init__(self) -> None:
        """Every variant passes here, from flags, a plan file or a stored plan alike."""
        _check_rtt(self)
        if not isinstance(self.name, str) or not 1 <= len(self.name) <= MAX_VARIANT_NAME \
                or not self.name.isprintable():
            raise UserError(f"variant name {str(self.name)[:MAX_VARIANT_NAME]!r} must be 1-{MAX_VARIANT_NAME} "
                            "printable characters", "name it with --variant name=NAME:...")
        if self.protocol not in PROTOCOLS:
            raise UserError(f"unknown protocol {self.protocol!r}", f"choose one of {', '.join(PROTOCOLS)}")
        if self.pooler is not None and not isinstance(self.pooler, PoolerSpec):
            raise UserError(f"variant {self.name}: the pooler is not a pooler description")
        if not _whole(self.idle) or not 0 <= self.idle <= MAX_IDLE:
            raise UserError(f"variant {self.name}: idle={self.idle!r} must be a whole number from 0 to {MAX_IDLE}")
        if self.idle_kind not in IDLE_KINDS:
            raise UserError(f"variant {self.name}: unknown idle kind {self.idle_kind!r}",
                            f"choose one of {', '.join(IDLE_KINDS)}")
        if self.rate is not None and not (isinstance(self.rate, int | float) and self.rate > 0
                                          and math.isfinite(self.rate)):
            raise UserError(f"variant {self.name}: rate must be a positive number of TPS")
        if not isinstance(self.think_ms, int | float) or not 0 <= self.think_ms <= MAX_THINK_MS:
            raise UserError(f"variant {self.name}: think time must be between 0 and 60 s")
        if not isinstance(self.settings, tuple) or any(not isinstance(s, tuple) or len(s) != 2
                                                       for s in self.settings):
            raise UserError(f"variant {self.name}: settings must be NAME=VALUE pairs")
        for name, value in self.settings:
            check_setting(name, value, where=f"variant {self.name}: ")

    def describe(self) -> str:
        parts = [self.protocol]
        if self.pipeline:
            parts.append("pipeline")
        if self.connect_per_txn:
            parts.append("new connection per transaction (-C)")
        if self.rate:
            parts.append(f"open loop at {self.rate:g} TPS (--rate; latency from the scheduled start)")
        if self.think_ms:
            parts.append(f"think time {self.think_ms:g} ms after each transaction (not in the latency figures)")
        if self.pooler is not None:
            parts.append(self.pooler.describe())
        if self.idle:
            parts.append(f"{self.idle} idle sessions ({IDLE_KINDS[self.idle_kind]})")
        if self.settings:
            parts.append("server restarted with " + ", ".join(f"{k}={v}" for k, v in self.settings))
        if self.rtt_ms:
            jitter = f" ± {self.rtt_jitter_ms:g} ms" if self.rtt_jitter_ms else ""
            parts.append(f"a network hop of {self.rtt_ms:g}{jitter} ms round trip (simulated by a relay)")
        return ", ".join(parts)


def _check_rtt(v: Variant) -> None:
    for what, x in (("rtt", v.rtt_ms), ("rtt_jitter", v.rtt_jitter_ms)):
        if not isinstance(x, int | float) or isinstance(x, bool) or not 0 <= x <= MAX_RTT_MS:
            raise UserError(f"variant {v.name}: {what} must be between 0 and {MAX_RTT_MS:g} ms, got {x!r}",
                            "for example --variant rtt=1ms:rtt_jitter=0.2ms")
    if v.rtt_jitter_ms and not v.rtt_ms:
        raise UserError(f"variant {v.name}: rtt_jitter needs a round trip to vary (rtt=)",
                        "for example --variant rtt=1ms:rtt_jitter=0.2ms")


WORKLOADS = ("ewallet", "tpcb", "select-only", "read-heavy", "custom", "captured")
PGBENCH_WORKLOADS = ("tpcb", "select-only", "read-heavy")


def _check_workload(w: WorkloadSpec) -> None:
    if w.name not in WORKLOADS:
        raise UserError(f"unknown workload {w.name!r}", f"choose one of {', '.join(WORKLOADS[:-1])}, or the "
                        "directory of a captured workload (pgknee workload capture), e.g. --workload ./myapp/")
    if w.name == "custom" and not w.scripts:
        raise UserError("--workload custom needs at least one --script FILE[@WEIGHT]")
    if w.name != "custom" and w.scripts:
        raise UserError("--script belongs to --workload custom", "add --workload custom")
    if (w.name == "captured") != bool(w.path) or (w.allow_writes and w.name != "captured"):
        raise UserError("--workload DIR (a directory made by pgknee workload capture) is the one workload "
                        "--allow-writes belongs to" if w.allow_writes else "a captured workload needs its directory",
                        "--workload DIR")
    if w.name in ("tpcb", "select-only", "read-heavy") and (w.scale != int(w.scale) or w.scale < 1):
        raise UserError(f"--scale for {w.name} is pgbench's scale factor, a whole number of at least 1 "
                        f"(100,000 accounts each), got {w.scale:g}")


def _check_variants(variants: tuple[Variant, ...]) -> None:
    names = [v.name for v in variants]
    if not names or len(set(names)) != len(names):
        raise UserError(f"variant names must be unique, got {', '.join(names)}",
                        "name them with --variant name=NAME:...")
    for v in variants:
        if v.protocol not in PROTOCOLS:
            raise UserError(f"unknown protocol {v.protocol!r}", f"choose one of {', '.join(PROTOCOLS)}")
        if v.pipeline and v.protocol == "simple":
            raise UserError(f"variant {v.name!r}: pipeline mode needs the extended or prepared protocol",
                            "use --protocol prepared")
        if v.think_ms and v.rate:
            raise UserError(f"variant {v.name!r}: think time and a target rate both pace the clients",
                            "choose one: think=... (closed loop) or rate=... (open loop)")


@dataclass(frozen=True)
class TargetSpec:
    dsn: str | None = None  # None: the embedded throwaway cluster
    pg_bindir: str | None = None
    settings: tuple[tuple[str, str], ...] = ()
    keep: bool = False
    # the server's machine, when nothing else can tell (collect/servermachine.py)
    server_cpus: int | None = None
    server_memory_gb: float | None = None
    server_ssh: str | None = None  # [user@]host (or ssh://user@host:port): its /proc read over ssh
    server_ssh_config: str | None = None  # an ssh configuration file of the user's (ssh -F)

    def __post_init__(self) -> None:
        if not isinstance(self.settings, tuple) or any(not isinstance(s, tuple) or len(s) != 2
                                                       for s in self.settings):
            raise UserError("server settings must be NAME=VALUE pairs")
        for name, value in self.settings:
            check_setting(name, value)
        check_server_machine(self.server_cpus, self.server_memory_gb, self.server_ssh)


MAX_SERVER_CPUS = 100_000
_SSH_DESTINATION = re.compile(r"(ssh://)?([A-Za-z0-9._-]+@)?[A-Za-z0-9._:\[\]-]+")


def check_server_machine(cpus: object, memory_gb: object, ssh: object) -> None:
    """What the user told of the server's machine: a count, an amount, an ssh destination that
    cannot be taken for one of ssh's options."""
    if cpus is not None and (not _whole(cpus) or not 1 <= cpus <= MAX_SERVER_CPUS):  # type: ignore[operator]
        raise UserError(f"--server-cpus must be a whole number from 1 to {MAX_SERVER_CPUS}, got {cpus!r}",
                        "give the server's CPU count (a managed service: its instance class's vCPUs)")
    if memory_gb is not None and (not isinstance(memory_gb, int | float) or isinstance(memory_gb, bool)
                                  or not 0 < memory_gb < 2**30 or not math.isfinite(memory_gb)):
        raise UserError(f"--server-memory must be a positive amount, got {memory_gb!r}", "e.g. --server-memory 64GB")
    if ssh is not None and (not isinstance(ssh, str) or ssh.startswith("-") or not _SSH_DESTINATION.fullmatch(ssh)):
        raise UserError(f"--server-ssh {str(ssh)[:100]!r} is not an ssh destination",
                        "give user@host or ssh://user@host:port (keys or an agent: pgknee never asks for a password)")


@dataclass(frozen=True)
class WorkloadSpec:
    name: str = "ewallet"  # ewallet | tpcb | select-only | read-heavy | custom
    scale: float = 1.0
    schema: str = ""  # '' : the workload's own (pgknee_ewallet, pgknee_pgbench)
    reinit: bool = False
    scripts: tuple[tuple[str, int], ...] = ()  # custom: (path, weight)
    path: str = ""  # captured: the directory `pgknee workload capture` wrote (--workload DIR)
    allow_writes: bool = False  # captured: replay its INSERT/UPDATE/DELETE (on a copy)

    def __post_init__(self) -> None:
        if isinstance(self.name, str) and self.name not in WORKLOADS and ("/" in self.name or os.path.isdir(self.name)):
            object.__setattr__(self, "path", self.name)  # --workload DIR: a captured workload
            object.__setattr__(self, "name", "captured")
        if self.path:
            object.__setattr__(self, "path", os.path.abspath(self.path))
        if not self.schema:
            object.__setattr__(self, "schema", default_schema(self.name))
        check_schema_name(self.schema)


def default_schema(workload: str) -> str:
    """Where a built-in workload lives: a schema pgknee creates and marks as its own."""
    return "pgknee_pgbench" if workload in PGBENCH_WORKLOADS else "pgknee_ewallet"


def check_schema_name(name: object) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        shown = str(name)[:64]
        raise UserError(f"schema name {shown!r} is not a plain lower-case identifier",
                        "letters, digits and underscores, at most 63, e.g. --schema bench_a")
    if name == "public" or name == "information_schema" or name.startswith("pg_"):
        raise UserError(f"schema {name!r} is PostgreSQL's own or shared: pgknee keeps its workload apart",
                        "choose a schema of pgknee's, e.g. --schema bench_a (the default is pgknee_ewallet)")
    return name


@dataclass(frozen=True)
class Plan:
    target: TargetSpec = field(default_factory=TargetSpec)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    clients: tuple[int, ...] = DEFAULT_CLIENTS
    duration_s: int = 60
    reps: int = 1
    summary: str = DEFAULT_SUMMARY  # over repetitions: rules.SUMMARIES
    noise_pct: float = DEFAULT_NOISE_PCT  # a step whose repetitions' TPS spread exceeds this is flagged noisy
    warmup_s: int = 0
    threads: int | None = None  # None: chosen per step
    max_tries: int = 3
    variants: tuple[Variant, ...] = (Variant(),)
    sample_interval_s: float = 0.1  # 0: no pg_stat_activity sampling
    os_interval_s: float = 1.0
    pre_s: float = 5.0  # the longest wait for a quiet server before pgbench starts (collect.pgstats.quiet)
    post_s: float = 1.0  # sampled after it ends
    settle_s: float = 3.0  # the longest wait for pg_stat_database to stop moving after a step
    idle_flush_s: float = 11.0  # idle sessions that read the catalogue report to pg_stat_database within 10 s
    server_wait_s: float = 120.0  # how long the sweep waits for a server that went away during a step
    # the share of transactions pgbench logs for latency; None: chosen per step so that about
    # rules.LATENCY_SAMPLES are logged (driver/steady and rules.log_sampling_rate)
    log_sampling_rate: float | None = None
    # --duration auto: a step stops once its steady TPS is known within ±steady_pct % (95%), after
    # min_duration_s and at most duration_s; None: every step runs duration_s
    steady_pct: float | None = None
    min_duration_s: int = 20  # four batches of MSER-5 after no warm-up at all
    pgbench: str | None = None
    pgbouncer: str | None = None  # the binary for managed pooled variants (default: from PATH)
    pgpool: str | None = None  # the binary for pgpool variants (default: from PATH, /usr/sbin)
    pooler_dsn: str | None = None  # a pgbouncer the user runs (pooled-external variants)
    pooler_admin_dsn: str | None = None  # its admin console, for SHOW POOLS / SHOW STATS
    pooler_interval_s: float = 0.25  # SHOW POOLS sampling
    sample_all_databases: bool = False  # sample every database's sessions, not only the benchmark's
    query_text: bool = True  # store the sampled sessions' query texts
    # --until-answer: the client counts are chosen as the run goes (analyze/adaptive.py) between the
    # smallest and the largest of `clients` (its coarse start); --budget: the whole run's wall time
    until_answer: bool = False
    budget_s: float | None = None

    def __post_init__(self) -> None:
        self._check_until_answer()
        self._check_types()
        self._check_sweep()
        self._check_collection()
        _check_variants(self.variants)
        self._check_pooler()
        self._check_settings_variants()
        _check_workload(self.workload)

    def _check_sweep(self) -> None:
        if self.duration_s < 1:
            raise UserError("--duration must be at least 1 second")
        if self.reps < 1:
            raise UserError("--reps must be at least 1")
        self._check_steady()
        if self.summary not in SUMMARIES:
            raise UserError(f"unknown summary {self.summary!r}", f"choose {' or '.join(SUMMARIES)}")
        check_noise_pct(self.noise_pct)
        if self.warmup_s < 0:
            raise UserError("--warmup cannot be negative")
        if self.threads is not None and self.threads < 1:
            raise UserError("--threads must be at least 1")
        if self.max_tries < 1:
            raise UserError("--max-tries must be at least 1")
        if not self.clients:
            raise UserError("the client list is empty", "give client counts like --clients 2,4,8,16,32")

    def _check_steady(self) -> None:
        if self.steady_pct is None:
            return
        if not 0.1 <= self.steady_pct <= 50:
            raise UserError(f"--steady-target must be between 0.1% and 50%, got {self.steady_pct:g}%")
        if self.duration_s < self.min_duration_s:
            raise UserError(f"--duration auto:{self.duration_s}s is shorter than a step's minimum "
                            f"({self.min_duration_s} s)", "give a longer maximum, e.g. --duration auto:2m")

    def _check_collection(self) -> None:
        if self.sample_interval_s != 0 and self.sample_interval_s < 0.01:
            raise UserError("--sample-interval must be at least 10ms (or 0 to switch sampling off)")
        if self.os_interval_s != 0 and self.os_interval_s < 0.1:
            raise UserError("--os-interval must be at least 100ms (or 0 to switch OS sampling off)")
        if self.log_sampling_rate is not None and not 0 < self.log_sampling_rate <= 1:
            raise UserError("--log-sampling-rate must be in (0, 1]", "or leave it out: pgknee chooses it per step")
        if self.workload.scale <= 0 or not math.isfinite(self.workload.scale):
            raise UserError("--scale must be a positive number")
        if any(x < 0 for x in (self.pre_s, self.post_s, self.settle_s, self.idle_flush_s, self.server_wait_s)):
            raise UserError("--pre, --post, --settle, --idle-flush and --server-wait cannot be negative")

    def _check_types(self) -> None:
        """A plan may come from a stored run: numbers must be numbers before they are compared."""
        for name in ("duration_s", "reps", "warmup_s", "max_tries", "min_duration_s"):
            if not _whole(getattr(self, name)):
                raise UserError(f"{name} must be a whole number, got {getattr(self, name)!r}")
        if not isinstance(self.clients, tuple) or not all(_whole(c) and c >= 1 for c in self.clients):
            raise UserError("client counts must be whole numbers of at least 1")
        for name in ("noise_pct", "sample_interval_s", "os_interval_s", "pre_s", "post_s", "settle_s", "idle_flush_s",
                     "server_wait_s", "log_sampling_rate", "steady_pct",
                     "pooler_interval_s"):
            if name in ("log_sampling_rate", "steady_pct") and getattr(self, name) is None:
                continue
            if not isinstance(getattr(self, name), int | float) or isinstance(getattr(self, name), bool):
                raise UserError(f"{name} must be a number, got {getattr(self, name)!r}")

    def _check_pooler(self) -> None:
        external = [v.name for v in self.variants if v.pooler is not None and v.pooler.kind == "external"]
        if external and not self.pooler_dsn:
            raise UserError(f"variant {external[0]} runs through your own pooler, but no --pooler-dsn was given",
                            "add --pooler-dsn postgresql://user@host:6432/db (the password in PGKNEE_POOLER_DSN "
                            "or ~/.pgpass)")
        if self.pooler_dsn and not external:
            raise UserError("--pooler-dsn is only used by a pooled-external variant",
                            "add --variant pooled-external, or drop --pooler-dsn")
        if self.pooler_admin_dsn and not self.pooler_dsn:
            raise UserError("--pooler-admin-dsn needs --pooler-dsn (the pooler it belongs to)")
        if self.pooler_interval_s < 0.05:
            raise UserError("--pooler-interval must be at least 50ms")

    def _check_settings_variants(self) -> None:
        for v in self.variants:
            if v.settings and self.target.dsn:
                raise UserError(f"variant {v.name} changes server settings ({', '.join(k for k, _ in v.settings)}), "
                                "which pgknee does only on its embedded server",
                                "run once per setting against your server and compare: pgknee compare RUN_A RUN_B")

    def _check_until_answer(self) -> None:
        """--until-answer looks for one variant's answer; --budget bounds it."""
        if self.budget_s is not None and not self.until_answer:
            raise UserError("--budget bounds an adaptive sweep", "add --until-answer, or drop --budget")
        if self.budget_s is not None and not (isinstance(self.budget_s, int | float) and self.budget_s > 0):
            raise UserError(f"--budget must be a positive duration, got {self.budget_s!r}")
        if not self.until_answer:
            return
        if len(self.variants) > 1:
            raise UserError("--until-answer looks for one variant's answer, and this plan has "
                            f"{len(self.variants)}", "run each variant with --until-answer on its own, then "
                                                     "pgknee compare RUN_A RUN_B")
        if self.variants[0].rate:
            raise UserError("--until-answer looks for a recommendation, and an open-loop variant (rate=) has none",
                            "drop rate=, or sweep it with --clients")

    def pooled(self) -> list[Variant]:
        return [v for v in self.variants if v.pooler is not None]

    def threads_for(self, clients: int, cpu_count: int) -> int:
        """pgbench threads: one per CPU of the client machine, never more than clients."""
        if self.threads is not None:
            return min(self.threads, clients)
        return max(1, min(clients, cpu_count))

    def estimated_seconds(self) -> float:
        per_step = self.duration_s + self.warmup_s + min(self.pre_s, 0.5) + self.post_s + 2.0  # pre: measured
        extra = sum(self._variant_setup_s(v) for v in self.variants)
        # a variant's first step probes its TPS first, when the log's sampling rate is pgknee's to choose
        probes = PROBE_S * len(self.variants) if self.log_sampling_rate is None and not self.warmup_s else 0
        return (per_step * len(self.variants) + extra) * len(self.clients) * self.reps + probes

    def _variant_setup_s(self, v: Variant) -> float:
        """Opening the variant's idle sessions (measured on 2 cores: 0.003 s each, 0.35 s each
        touching the catalogue, then the wait for their statistics), a restart for its settings."""
        each_s, flush_s = (0.35, self.idle_flush_s) if v.idle_kind == "catalog" else (0.003, 0.0)
        return v.idle * each_s + flush_s + (3.0 if v.settings else 0.0)

    def to_dict(self) -> dict[str, Any]:
        """For storing with the run; the DSN is stored without its password."""
        from pgknee.base.dsn import redact_dsn

        d = asdict(self)
        for where, key in ((d["target"], "dsn"), (d, "pooler_dsn"), (d, "pooler_admin_dsn")):
            where[key] = redact_dsn(where[key]) if where[key] else None
        return d
