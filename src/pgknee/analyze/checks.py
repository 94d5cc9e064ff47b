"""Checks that tell a user which numbers to trust. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pgknee.analyze.words import clause
from pgknee.model.keys import CheckId, CheckStatus
from pgknee.model.results import PoolerRecord, StepRecord
from pgknee.model.rules import database_concurrency, measured_window
from pgknee.model.samples import OsSample, PoolerProcessSample

TPS_PGBENCH_TOLERANCE = 3.0  # % between TPS from the log and TPS pgbench printed
TPS_DB_TOLERANCE = 5.0  # % between TPS from the log and pg_stat_database's commits
# commits an autovacuum worker makes in a database per table it vacuums or analyzes, its own start
# included (measured on PostgreSQL 15, naptime 1 s: 119 commits for 40 tables vacuumed and analyzed)
AUTOVACUUM_COMMITS = 1.5
LITTLE_TOLERANCE = 10.0  # % between clients and TPS x measured mean latency
CLIENT_CPU_SATURATED = 85.0  # % of the pgbench threads' capacity
POOLER_TOLERANCE = 20.0  # % between TPS x the pooler's mean transaction time and mean sv_active
POOLER_BOUND_PCT = 85.0  # % of one core, the busiest pooler process's mean over the bench phase


class CheckUnit(StrEnum):
    """What a check's value measures."""

    DEVIATION_PCT = "% deviation"  # how far the two figures compared disagree, signed
    CAPACITY_PCT = "% of capacity"  # how much of a resource was used


@dataclass(frozen=True)
class Check:
    """One check of one step: whether it passed, what it compared (detail, for a reader) and its
    figure (value in unit), for the tables. A check that does not apply has no value."""

    id: CheckId
    status: CheckStatus
    detail: str
    value: float | None = None
    unit: CheckUnit | None = None


def met(checks: Iterable[Check]) -> list[CheckId]:
    """The checks among `checks`, in the order first met (the checks table's columns)."""
    return list(dict.fromkeys(c.id for c in checks))


def _na(check: CheckId, why: str) -> Check:
    return Check(check, CheckStatus.NA, why)


def _status(ok: bool) -> CheckStatus:
    return CheckStatus.OK if ok else CheckStatus.WARN


def _unless(ok: bool, why: str) -> str:
    """What a check adds to its detail when it warns; nothing when it passes."""
    return "" if ok else why


def _deviation(check: CheckId, d: float, tolerance: float, detail: str) -> Check:
    """A check that two figures agree: `d` % apart, within `tolerance` % passes."""
    return Check(check, _status(abs(d) <= tolerance), detail, d, CheckUnit.DEVIATION_PCT)


# a managed pgbouncer is stopped before the statistics are read; an external one keeps its
# server connections, whose counters reach pg_stat_database only after up to 10 s idle
_EXTERNAL_LAG = ("through your own pooler: its server connections stay open and report to pg_stat_database "
                 "up to 10 s late")


# under these protocols active_time leaves out Parse and Bind (docs/aas.md): it is a lower bound
_CLOCK_LEAVES_OUT_PARSE_BIND = frozenset({"extended", "prepared"})
_PARSE_BIND = "the server's clock leaves out Parse and Bind under this protocol, so sampling may exceed it"


def _diff_pct(a: float, b: float) -> float:
    return 100.0 * (a - b) / b if b else 0.0


def tps_vs_pgbench(step: StepRecord) -> Check:
    if step.tps is None or step.tps_pgbench is None:
        return _na(CheckId.TPS_VS_PGBENCH, "no pgbench summary")
    d = _diff_pct(step.tps, step.tps_pgbench)
    return _deviation(CheckId.TPS_VS_PGBENCH, d, TPS_PGBENCH_TOLERANCE,
                      f"log {step.tps:.1f} vs pgbench {step.tps_pgbench:.1f} tps ({d:+.1f}%)")


def tps_vs_database(step: StepRecord, commits_per_txn: float = 1.0, maintenance: float = 0.0) -> Check:
    """pg_stat_database's commits against the log's transactions times the commits each
    makes (a script of autocommit statements commits once per statement), less what the server
    committed besides: the sessions' starts and the tables autovacuum vacuumed or analyzed
    (`maintenance`, DatabaseStep.maintenance)."""
    if step.tps is None or step.tps_db is None:
        return _na(CheckId.TPS_VS_COMMITS, "no pg_stat_database delta")
    if step.pooler_kind == "external":
        return _na(CheckId.TPS_VS_COMMITS, _EXTERNAL_LAG)
    if step.connect_per_txn and step.pooler_kind is None:
        # every new session commits transactions of its own while it starts (measured: about two)
        return _na(CheckId.TPS_VS_COMMITS, f"with -C each connection's start-up commits too: "
                                           f"{step.tps_db:.1f} commits/s vs {step.tps:.1f} tps")
    expected = step.tps * commits_per_txn
    # every new session commits once while it starts (measured: 1,013 extra commits for 1,000
    # clients); pg_stat_database's delta spans the connecting, the log's window does not
    window = measured_window(step.transactions, step.tps, step.duration_s)
    sessions = database_concurrency(step.clients, step.pooler_kind, step.pool_size, step.pool_reserve,
                                    step.pool_processes)
    other, besides = _other_commits(step, sessions, maintenance)
    measured = step.tps_db - other / window if window > 0 else step.tps_db
    d = _diff_pct(measured, expected)
    per = f" x {commits_per_txn:.2f} commits per transaction" if commits_per_txn != 1.0 else " tps"
    return _deviation(CheckId.TPS_VS_COMMITS, d, TPS_DB_TOLERANCE,
                      f"pg_stat_database {measured:.1f} commits/s (less {besides}) vs log "
                      f"{step.tps:.1f}{per} ({d:+.1f}%)")


def _other_commits(step: StepRecord, sessions: int, maintenance: float) -> tuple[float, str]:
    """The commits in the benchmark database over a step that are not its transactions, and what
    they are: each server session's start, autovacuum's, and pgpool-II's own."""
    other, said = float(sessions), [f"{sessions} session starts"]
    if step.pooler_kind == "pgpool":
        # pgpool-II asks each new server session SELECT version(), and resets each client's at its
        # logout (ABORT; DISCARD ALL): a commit each (seen in the server's log of statements)
        other += sessions + step.clients
        said.append(f"pgpool's {sessions} version() queries and {step.clients} resets")
    if maintenance:
        other += AUTOVACUUM_COMMITS * maintenance
        said.append(f"~{AUTOVACUUM_COMMITS * maintenance:.0f} of autovacuum's on {maintenance:.0f} tables")
    return other, ", ".join(said)


def littles_law(step: StepRecord) -> Check:
    """Closed loop: clients ~ TPS x mean latency (measured). A gap is time spent
    outside the measured transaction: client threads, connection setup, a queue."""
    if not step.tps or step.lat_avg_ms is None:
        return _na(CheckId.LITTLES_LAW, "no measured latency")
    if step.rate:
        return _na(CheckId.LITTLES_LAW, f"open loop at {step.rate:g} TPS: clients wait for their schedule, "
                                        "so not all of them are busy")
    rate = step.tps + (step.failed or 0) / step.duration_s
    busy = rate * (step.lat_avg_ms + step.think_ms) / 1000.0
    d = _diff_pct(busy, step.clients)
    if step.think_ms:
        in_txn = rate * step.lat_avg_ms / 1000.0
        return _deviation(CheckId.LITTLES_LAW, d, LITTLE_TOLERANCE,
                          f"TPS x (latency + {step.think_ms:g} ms think) = {busy:.2f} of {step.clients} clients "
                          f"({d:+.1f}%); {in_txn:.2f} in a transaction at a time")
    return _deviation(CheckId.LITTLES_LAW, d, LITTLE_TOLERANCE,
                      f"TPS x latency = {busy:.2f} busy clients of {step.clients} ({d:+.1f}%)")


def sampled_vs_active_time(step: StepRecord, sampled_aas: float | None, snapshots: int,
                           active_time_ms: float | None, sampled_busy: float | None = None,
                           idle_in_xact_ms: float | None = None) -> Check:
    """Sampling against the server's own clock (PostgreSQL 14+); docs/aas.md has the measurements.

    Both sides change at the same moment (pgstat_report_activity charges the time of the state
    it leaves and publishes the new one), but two things part them. Under CPU contention the
    sampler gets a core mostly when a backend has just finished a statement and blocked, so a
    snapshot sees 'idle in transaction' more often than the clock counts it: active alone comes
    out low (2 cores, simple protocol: 4-41%), active + idle in transaction does not. And under
    the extended and prepared protocols the clock leaves out Parse and Bind: each of them reports
    'active' again, which restarts the state's timer without charging it (measured on the
    e-wallet workload, extended protocol: the sum sampled 1-6% above the clock; a query that
    takes long to plan, far more). So the check judges active + idle in transaction,
    shows active alone beside it, and says when an excess is the clock's."""
    name = CheckId.AAS_VS_ACTIVE_TIME
    if sampled_aas is None or snapshots == 0:
        return _na(name, "no snapshots")
    if active_time_ms is None:
        return _na(name, "server has no pg_stat_database.active_time (PostgreSQL < 14)")
    if step.bench_start is None or step.bench_end is None:
        return _na(name, "no bench window")
    if step.pooler_kind == "external":
        return _na(name, _EXTERNAL_LAG)
    if step.idle and step.idle_kind == "sleep":
        return _na(name, "sleeping idle sessions are active to the server's clock but left out of the sampled "
                         "workers (measured: 37-81% apart)")
    if step.pipeline:
        # measured: in pipeline mode snapshots show 10-60% more sessions busy than the server's clocks
        return _na(name, "pipeline mode: the server's clock counts only the last message before each Sync "
                         "(not comparable)")
    window = max(step.bench_end - step.bench_start, 1e-9)
    truth = active_time_ms / 1000.0 / window
    active = f"sampled active {sampled_aas:.2f} vs active_time {truth:.2f} ({_diff_pct(sampled_aas, truth):+.1f}%)"
    if sampled_busy is not None and idle_in_xact_ms is not None:
        sampled, truth = sampled_busy, (active_time_ms + idle_in_xact_ms) / 1000.0 / window
        what = f"in statement or transaction: sampled {sampled:.2f} vs server {truth:.2f}"
    else:
        sampled, what, active = sampled_aas, f"sampled AAS {sampled_aas:.2f} vs active_time {truth:.2f}", ""
    # sampling error ~ 1/sqrt(sessions x snapshots); allow 3 sigma, at least 10%
    tol = max(10.0, 300.0 / max((truth * snapshots) ** 0.5, 1e-9))
    d = _diff_pct(sampled, truth)
    detail = f"{what} ({d:+.1f}%, tolerance {tol:.0f}%)" + clause("; {}", active)
    if step.protocol in _CLOCK_LEAVES_OUT_PARSE_BIND and d > 0:
        detail += f"; {_PARSE_BIND}"
    return _deviation(name, d, tol, detail)


def client_cpu(step: StepRecord, samples: Sequence[OsSample]) -> Check:
    vals = [s.client_cpu_pct for s in samples if s.client_cpu_pct is not None]
    if not vals:
        return _na(CheckId.CLIENT_CPU, "no client CPU samples")
    mean = sum(vals) / len(vals)
    share = mean / step.threads
    ok = share <= CLIENT_CPU_SATURATED
    return Check(CheckId.CLIENT_CPU, _status(ok),
                 f"pgbench used {mean:.0f}% CPU over {step.threads} thread(s) ({share:.0f}% of their capacity)"
                 + _unless(ok, "; the client may be the bottleneck"), share, CheckUnit.CAPACITY_PCT)


def pooler_bound(step: StepRecord, pooler: PoolerRecord | None, samples: Sequence[OsSample]) -> Check:
    """A pooler process is single-threaded: near a full core (its busiest process's mean over the
    bench phase, user and system), the step measured the pooler's ceiling, not the server's. The
    time it waited for a CPU (runnable on a run queue) is said beside it, not counted: on a machine
    the server and pgbench saturate, every process waits (one pgbouncer at 35% of a core waited
    52% of the time, and each of two at 21% waited 63%, with 35% more throughput), so the wait
    tells a starved machine, not a saturated pooler; a sweep of processes with the same server
    connections tells whether more processes help (analyze/poolprocs.py). Each process's own
    samples (format 17+); before them, the busiest process's CPU the OS sampler kept."""
    name = CheckId.POOLER_BOUND
    if step.pooler_kind not in ("managed", "pgpool"):
        return _na(name, "your own pooler: its processes' CPU is not pgknee's to see")
    what = "pgpool-II's busiest process" if step.pooler_kind == "pgpool" else "pgbouncer"
    n = step.pool_processes
    busiest = _busiest_process(pooler.processes if pooler is not None else [])
    if busiest is not None:
        process, user, system, wait = busiest
        cpu = user + system
        where = f"process {process} of {n}, " if n > 1 else ""
        waited = clause("; it waited for a CPU {:.0f}% of the time", wait)
        detail = f"{what} was at {cpu:.0f}% of a core ({where}user {user:.0f}%, system {system:.0f}%{waited})"
    else:
        vals = [s.pooler_cpu_pct for s in samples if s.pooler_cpu_pct is not None]
        if not vals:
            return _na(name, "no pooler CPU samples")
        cpu = sum(vals) / len(vals)
        detail = f"{what} was at {cpu:.0f}% of a core"
    ok = cpu < POOLER_BOUND_PCT
    return Check(name, _status(ok), detail + _unless(ok, ": the step shows the pooler's ceiling, not the server's"),
                 cpu, CheckUnit.CAPACITY_PCT)


def _busiest_process(rows: Sequence[PoolerProcessSample]) -> tuple[int, float, float, float | None] | None:
    """(process, mean user %, mean system %, mean run-queue wait % or None) of the process with the
    most CPU on average."""
    per: dict[int, list[tuple[float, float, float | None]]] = {}
    for r in rows:
        if r.cpu_user_pct is not None and r.cpu_system_pct is not None:
            per.setdefault(r.process, []).append((r.cpu_user_pct, r.cpu_system_pct, r.runq_wait_pct))
    means = []
    for p, v in per.items():
        waits = [w for _, _, w in v if w is not None]
        means.append((p, sum(u for u, _, _ in v) / len(v), sum(s for _, s, _ in v) / len(v),
                      sum(waits) / len(waits) if waits else None))
    return max(means, key=lambda m: m[1] + m[2], default=None)


def failures(step: StepRecord) -> Check:
    f = step.failed or 0
    if f == 0 and not step.retried:
        return Check(CheckId.FAILURES, CheckStatus.OK, "no failed or retried transactions")
    return Check(CheckId.FAILURES, _status(not f),
                 f"{f} failed, {step.retried or 0} retried ({step.retries or 0} retries)")


def pooler_occupancy(step: StepRecord, pooler: PoolerRecord | None) -> Check:
    """Little's law at the pooler: server connections busy = the pooler's transaction rate
    x its mean transaction time on a server connection (SHOW STATS deltas) against the
    mean sv_active sampled from SHOW POOLS. pgbouncer's transaction time includes the
    client's wait for a server (measured: xact_time - wait_time matches sv_active), so
    the wait is taken out. In session mode a server connection is 'active' while its
    client is connected, in a transaction or not, so the law does not apply."""
    name = CheckId.POOLER_OCCUPANCY
    if pooler is None or not pooler.samples:
        return _na(name, "no SHOW POOLS samples (no admin console)")
    if step.pool_mode == "session" or pooler.facts.reported("pool_mode") == "session":
        return _na(name, "session mode: server connections stay with their clients")
    xacts, xact_time = pooler.delta("total_xact_count"), pooler.delta("total_xact_time")
    if not xacts or xact_time is None or step.bench_start is None or step.bench_end is None:
        return _na(name, "no SHOW STATS totals")
    window = max(step.bench_end - step.bench_start, 1e-9)
    busy = (xact_time - (pooler.delta("total_wait_time") or 0.0)) / 1e6 / window
    sampled = sum(s.sv_active for s in pooler.samples) / len(pooler.samples)
    d = _diff_pct(busy, sampled) if sampled else 0.0
    return _deviation(name, d, POOLER_TOLERANCE,
                      f"pooler (transaction - wait) time / window = {busy:.2f} busy server connections "
                      f"vs sampled sv_active {sampled:.2f} ({d:+.1f}%)")
