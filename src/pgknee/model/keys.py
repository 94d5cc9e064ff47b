"""Every name a fact is stored under, and every check's identifier: one module that writers
(the run loop, the collectors, the pooler) and readers (analysis, reports) both import, so a
key is spelled once. Facts are three kinds of key/value rows in the store:

- Env: the run's environment (run_environment): machine, server, settings, workload, checks
  after the run, the plan file.
- StepFact: numbers per step (step_facts): memory, idle sessions, a variant's settings.
- PoolerFact: per step through a pooler (step_pooler): its kind, settings, SHOW STATS deltas.

Keys with a variable part are built by the functions here, never by f-strings elsewhere.
"""

from __future__ import annotations

from enum import StrEnum


class Env(StrEnum):
    PGKNEE_VERSION = "pgknee.version"
    HOST_NAME = "host.name"
    HOST_OS = "host.os"
    HOST_CPUS = "host.cpus"
    AGENTS = "agents"  # a run whose pgbench ran on agents (pgknee run --agents): their names
    HOST_MEM_GB = "host.mem_gb"
    HOST_PYTHON = "host.python"
    PGBENCH_PATH = "pgbench.path"
    PGBENCH_VERSION = "pgbench.version"
    SERVER_VERSION = "server.version"
    SERVER_VERSION_NUM = "server.version_num"
    SERVER_IS_SUPERUSER = "server.is_superuser"
    # the server's machine (collect/servermachine.py): each figure with where it came from
    SERVER_CPUS = "server.machine.cpus"
    SERVER_CPUS_SOURCE = "server.machine.cpus_source"  # or 'unknown: why'
    SERVER_CPUS_LIMITED = "server.machine.cpus_limited"  # what narrowed them: a cpuset, a cgroup quota
    SERVER_MEM_GB = "server.machine.mem_gb"
    SERVER_MEM_SOURCE = "server.machine.mem_source"
    SERVER_MANAGED = "server.managed"  # the managed service it is, if one
    SERVER_MANAGED_HIDDEN = "server.managed.hidden"  # what it keeps to itself, and where to find it
    SERVER_OS = "server.os"  # how the server's OS was sampled per step, or why it was not
    SERVER_KCACHE = "server.pg_stat_kcache"  # its version, when installed in the benchmark's database
    TARGET_KIND = "target.kind"
    TARGET_ENDPOINT = "target.endpoint"
    TARGET_LOCAL = "target.local"
    TARGET_TLS = "target.tls"
    TARGET_BINDIR = "target.bindir"
    TARGET_SERVER_USER = "target.server_user"
    PGBOUNCER_PATH = "pgbouncer.path"
    PGBOUNCER_VERSION = "pgbouncer.version"
    PGPOOL_PATH = "pgpool.path"
    PGPOOL_VERSION = "pgpool.version"
    POOLER_EXTERNAL = "pooler.external"
    PLACEMENT_SERVER_CPUS = "placement.server_cpus"
    PLACEMENT_CLIENT_CPUS = "placement.client_cpus"
    PLACEMENT_PINNED = "placement.server_processes_pinned"
    PLAN_FILE = "plan.file"
    PLAN_SOURCE = "plan.source"
    CHECK_MONEY = "check.money"
    CHECK_MONEY_OK = "check.money.ok"
    SAMPLE_ALL_DATABASES = "collect.sample_all_databases"
    QUERY_TEXT = "collect.query_text"
    WAIT_SAMPLING = "collect.wait_sampling"  # pg_wait_sampling: 'on, ...' or why not
    UNTIL_ANSWER_STOPPED = "until_answer.stopped"  # why an adaptive sweep (--until-answer) stopped
    UNTIL_ANSWER_TARGET = "until_answer.target"  # the answer it looked for: fraction of the peak, p99 target


# prefixes of the environment's keyed families
SETTING = "setting."  # setting.NAME: the server's setting as pgknee read it
EMBEDDED_SETTING = "embedded.setting."  # what pgknee configured on its embedded server
WORKLOAD = "workload."  # workload.KEY: what the workload reported when installed
POOLER_EXTERNAL_FACT = "pooler.external."
EXTENDED = "extended."  # extended.TIME: a run --extend
COLLECTOR = "collect.server."  # collect.server.NAME: a server-side collector 'on', or why it is off


def collector(name: str) -> str:
    return f"{COLLECTOR}{name}"


def setting(name: str) -> str:
    return f"{SETTING}{name}"


def embedded_setting(name: str) -> str:
    return f"{EMBEDDED_SETTING}{name}"


def workload_fact(key: str) -> str:
    return f"{WORKLOAD}{key}"


def observed(name: str) -> str:
    """A captured workload's observation (workload capture --observe): hold_ms, idle_share, ..."""
    return f"{WORKLOAD}observed.{name}"


def workload_size(table: str) -> str:
    return f"{WORKLOAD}size.{table}"


def script_sha256(filename: str) -> str:
    return f"{WORKLOAD}script.{filename}.sha256"


def commits_per_txn(variant: str, script: str) -> str:
    return f"commits_per_txn.{variant}.{script}"


def check_detail(check: str, key: str) -> str:
    return f"check.{check}.{key}"


def pooler_external_env(key: str) -> str:
    return f"{POOLER_EXTERNAL_FACT}{key}"


def extended_at(stamp: str) -> str:
    return f"{EXTENDED}{stamp}"


class StepFact(StrEnum):
    IDLE_OPENED = "idle.opened"
    IDLE_OPEN_S = "idle.open_s"
    IDLE_OPEN_AT_END = "idle.open_at_end"
    ACTIVITY_TICKS_LOST = "activity.ticks_lost"  # pg_stat_activity sampling ticks without a connection
    ACTIVITY_RECONNECTS = "activity.reconnects"
    ACTIVITY_INTERVAL_S = "activity.interval_s"  # the interval the step's sampling ended at (collect.pace)
    ACTIVITY_TICKS_LATE = "activity.ticks_late"  # ticks that began late: the query before overran
    SERVER_RESTARTED = "server.restarted"  # 1: the server restarted (or failed over) during the step
    LOG_SAMPLING_RATE = "log.sampling_rate"  # the share of transactions pgbench logged for latency
    QUIET_WAIT_S = "quiet.wait_s"  # the 'pre' phase: how long the server took to be quiet
    QUIET_BACKENDS_LEFT = "quiet.backends_left"  # the last step's pgbench backends still there at --pre's end
    # a checkpoint running as the 'pre' phase ended: an immediate one (waited for) or a spread one
    # (runs before this release stored both in one quiet.checkpoint: 1 immediate, 0.5 spread)
    QUIET_IMMEDIATE_CHECKPOINT = "quiet.immediate_checkpoint"
    QUIET_SPREAD_CHECKPOINT = "quiet.spread_checkpoint"
    PROBE_TPS = "probe.tps"  # the warm-up's TPS before a variant's first step, for the log's sampling rate
    POOLER_DIED = "pooler.died"  # 1: pgbouncer died during the step (its reason says how)
    WARMUP_TRANSACTIONS = "warmup.transactions"  # the unmeasured run's (warm-up or probe), in the workload's books
    LOG_TRANSACTIONS = "log.transactions"  # how many successful ones the latency figures come from
    BENCH_SECONDS = "bench.seconds"  # pgbench's measured window (a --duration auto step's actual length)
    # pgknee's own statements in the benchmark database over the bench (its statistics reads and
    # samplers), each a commit there: pg_stat_database's xact_commit less these is the workload's
    OWN_COMMITS = "own.commits"
    STEADY_WARMUP_S = "steady.warmup_s"  # leading seconds MSER-5 cut as warm-up
    STEADY_TPS = "steady.tps"  # mean TPS after the warm-up
    STEADY_HALFWIDTH_PCT = "steady.halfwidth_pct"  # its 95% interval's half-width, % of the mean
    STEADY_STOPPED = "steady.stopped"  # 1: stopped once steady (--duration auto); 0: ran to its end
    STEADY_AT_S = "steady.at_s"  # when the interval first was within the target
    # the network (netsim): round trips probed before the step on the path pgbench takes (through the
    # relay when the variant simulates a hop), ms; the direct path's; what the relay added
    NET_RTT_MS = "net.rtt_ms"  # median
    NET_RTT_P99_MS = "net.rtt_p99_ms"
    NET_RTT_MIN_MS = "net.rtt_min_ms"
    NET_DIRECT_RTT_MS = "net.direct_rtt_ms"  # the median without the relay
    NET_RELAY_ADDED_MS = "net.relay_added_ms"  # through the relay less direct (asked rtt + the relay's own cost)
    NET_ROUND_TRIPS = "net.round_trips_per_txn"  # counted from the variant's scripts (run/network.py)
    # what the relay said of itself at the step's end: chunks sent later than asked (each way), its CPU
    NET_RELAY_LATE_MEAN_MS = "net.relay_late_mean_ms"
    NET_RELAY_LATE_P99_MS = "net.relay_late_p99_ms"
    NET_RELAY_CPU_PCT = "net.relay_cpu_pct"  # % of one core over the relay's life
    AGENTS = "agents.count"  # a step run by agents (run/distributed.py): how many ran it
    AGENTS_LOST = "agents.lost"  # how many died or stopped answering during it
    # the relay was gone at the step's end: the code it exited with, or the signal that killed it
    # (runs before this release kept both in one net.relay_died, a signal as -N)
    NET_RELAY_EXIT_CODE = "net.relay_exit_code"
    NET_RELAY_SIGNAL = "net.relay_signal"
    # pg_stat_kcache over the bench phase (collect/kcache.py): the database's queries' CPU and I/O
    # pg_stat_kcache per step in runs before format 16 (now a record: model.server.KcacheStep)
    KCACHE_USER_S = "kcache.user_s"
    KCACHE_SYSTEM_S = "kcache.system_s"
    KCACHE_READ_BYTES = "kcache.read_bytes"
    KCACHE_WRITE_BYTES = "kcache.write_bytes"


# memory pictures taken during a step, each under a prefix (collect.memory.memory_picture)
BEFORE_IDLE = "before_idle."
AT_END = "end."
MEM_AVAILABLE = "mem.memavailable_kb"
MEM_FREE = "mem.memfree_kb"
MEM_CACHED = "mem.cached_kb"
MEM_SHMEM = "mem.shmem_kb"
PSS_SERVER = "pss.server_kb"
PSS_SERVER_PROCESSES = "pss.server_processes"
PSS_IDLE_MEAN = "pss.idle_backend_mean_kb"
PSS_IDLE_BACKENDS = "pss.idle_backends"


def memory_fact(prefix: str, key: str) -> str:
    return f"{prefix}{key}"


class PoolerFact(StrEnum):
    KIND = "kind"
    VERSION = "version"
    MISSING = "missing"
    SAMPLER_ERRORS = "sampler_errors"


POOLER_SETTING = "setting."  # setting.NAME: what a managed pgbouncer was told
POOLER_DELTA = "delta."  # delta.NAME: a SHOW STATS total's change over the bench phase
POOLER_EXTERNAL = "external."  # external.NAME: what the user's own pooler's console reported
POOLER_PROCESS = "process."  # process.N.NAME: one pgbouncer process's SHOW STATS change (processes=N)


def pooler_setting(name: str) -> str:
    return f"{POOLER_SETTING}{name}"


def pooler_delta(name: str) -> str:
    return f"{POOLER_DELTA}{name}"


def pooler_external(name: str) -> str:
    return f"{POOLER_EXTERNAL}{name}"


def pooler_process(process: int, name: str) -> str:
    return f"{POOLER_PROCESS}{process}.{name}"


class CheckId(StrEnum):
    """The checks that say which numbers to trust (analyze/checks.py), as the tables name them."""

    TPS_VS_PGBENCH = "tps-vs-pgbench"
    TPS_VS_COMMITS = "tps-vs-commits"
    LITTLES_LAW = "littles-law"
    AAS_VS_ACTIVE_TIME = "aas-vs-active-time"
    CLIENT_CPU = "client-cpu"
    FAILURES = "failures"
    POOLER_OCCUPANCY = "pooler-occupancy"
    POOLER_BOUND = "pooler-bound"  # a pooler process near a full core: the step shows the pooler's ceiling
    NETWORK_BOUND = "network-bound"  # round trips x RTT against the latency (client-cpu: the client saturated)
    RTT_ACHIEVED = "rtt-achieved"  # a simulated network hop gave the asked round trip
    AGENTS_AGREE = "agents-agree"  # a step run by agents: their windows overlap, their clocks agree
    CHECKPOINT = "checkpoint"  # a checkpoint, or the full-page-image burst after one, during the step


class CheckStatus(StrEnum):
    OK = "ok"
    WARN = "warn"
    NA = "n/a"


# ---- for the readers (analysis and reports) -------------------------------------------------
# the environment's families by the first part of their keys, as the report's environment
# section groups them (report/document.py)
HOST = "host."
SERVER = "server."
EMBEDDED = "embedded."
PGBENCH = "pgbench."
TARGET = "target."
PGKNEE = "pgknee."
CHECK = "check."  # what was checked after the run: check.money, check.NAME.KEY

# the run's command line as a JSON argv, under the bare name: the report's environment section
# shows it apart from the other facts. Nothing writes it today (the run loop keeps the command
# line in run_commands, purpose 'pgknee'); the report still reads it from older stores.
COMMAND_LINE = "pgknee"
