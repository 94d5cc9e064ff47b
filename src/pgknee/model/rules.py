"""Rules that several layers apply, each defined once: what a repeated step's figure is, when a
step is noisy, how many sessions a step holds on the database, over which seconds its TPS
counts. Pure; the plan, the run loop, analysis and the reports all import them from here."""

from __future__ import annotations

import math

from pgknee.base.errors import UserError

# the figure shown for a repeated step: the median of the repetitions, or the best of N (the
# repetition with the highest TPS, as article 002 reports)
SUMMARIES = ("median", "best")
DEFAULT_SUMMARY = "median"

# a step whose repetitions' TPS spread, (max - min) / median, exceeds this percentage is noisy
DEFAULT_NOISE_PCT = 10.0
# a CPU is saturated over a step when its busiest second reached the first and its mean the second
# (the reasons, the verdict's evidence and the charts say the same thing from the same samples)
SATURATED_CPU_PEAK_PCT = 90.0
SATURATED_CPU_MEAN_PCT = 80.0


def cpu_saturated(peak_pct: float | None, mean_pct: float | None) -> bool:
    return (peak_pct is not None and mean_pct is not None and peak_pct >= SATURATED_CPU_PEAK_PCT
            and mean_pct >= SATURATED_CPU_MEAN_PCT)


def check_noise_pct(pct: float) -> float:
    if not (0 < pct <= 1000 and math.isfinite(pct)):
        raise UserError(f"the noise threshold must be a percentage above 0, got {pct:g}",
                        "for example --noise-threshold 10 (a TPS spread (max-min)/median over 10% is noisy)")
    return pct


def spread_pct(values: list[float] | tuple[float, ...]) -> float:
    """(max - min) / median, in %: how much repetitions disagree."""
    if len(values) < 2:
        return 0.0
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return 100.0 * (max(values) - min(values)) / median if median else 0.0


def is_noisy(values: list[float] | tuple[float, ...], threshold_pct: float) -> bool:
    return len(values) > 1 and spread_pct(values) > threshold_pct


def database_concurrency(clients: int, pooler_kind: str | None, pool_size: int | None, reserve: int = 0,
                         processes: int = 1) -> int:
    """How many sessions a step holds on the database at once: its clients, or, through a pool
    pgknee manages, no more than the pool's server connections.

    The reserve pool counts. pgbouncer opens reserve_pool_size more server connections once a
    client has waited reserve_pool_timeout (5 s here); a pool smaller than its clients has
    clients waiting all step, so the reserve is in use within seconds of the start and stays in
    use. Counting pool + reserve is therefore both the capacity the server must have room for
    and the concurrency the step ran at. Through the user's own pooler (external) pgknee does not
    know the pool, and counts the clients. Several pgbouncer processes (processes=N) each have
    their own pool."""
    if pooler_kind in ("managed", "pgpool") and pool_size:
        return min(clients, processes * (pool_size + reserve))
    return clients


def measured_window(transactions: int | None, tps: float | None, fallback_s: float) -> float:
    """The seconds a step's TPS counts over: its transactions divided by its TPS (what pgbench
    itself divides by: its run time less the clients' initial connection time, which -T does not
    leave out); `fallback_s` when there is no TPS to divide by."""
    if transactions and tps:
        return transactions / tps
    return fallback_s


# the two summaries by name, for the code that tells them apart
MEDIAN, BEST = SUMMARIES


# pgbench logs a share of the transactions for latency (--sampling-rate), enough for the highest
# percentile pgknee reports: LATENCY_TAIL of them beyond p99. An order statistic's relative error
# shrinks as 1/sqrt(its tail count): 100 beyond p99 put p99 within about ±3-4% (95% of draws) of the
# full log's, p50 and p95 tighter; 50 within ±4.5-6.4%, 40 within ±5.3-6.8% (bench/observer_effect.py,
# draws from full e-wallet logs of 5 and 10 s at 4 and 8 clients, 2026-11-26). Every transaction
# written costs pgbench's CPU: 22% more instructions per transaction at full logging (bench/pgbench_cost.py,
# counted by valgrind: about 4,900 per logged transaction and 210 on every one once it samples),
# so about 3% at a tenth logged, taken from the server it shares the machine with. So the log keeps
# 10,000 of a step's transactions, but no more than LOG_SHARE_CAP of them while that still keeps
# LATENCY_MIN_SAMPLES: a 5 s step at 13,500 TPS logged 15% (+4.2% of pgbench's instructions per
# transaction), and now 10% (+3.1%). 8% would cost about 2.6% but keep some 4,200 at 10,500 TPS:
# the floor of 5,000 is kept, and a 5 s step's log stays at the edge of the 3% CPU target.
LATENCY_TAIL = 100
LATENCY_PERCENTILE = 99.0
LATENCY_SAMPLES = round(LATENCY_TAIL / (1 - LATENCY_PERCENTILE / 100))  # 10,000
LATENCY_MIN_SAMPLES = LATENCY_SAMPLES // 2  # 50 beyond p99
LOG_SHARE_CAP = 0.1  # pgbench's cost of its log, about 3% of its instructions per transaction


def log_sampling_rate(expected_transactions: float | None, wanted: int = LATENCY_SAMPLES) -> float:
    """The share of a step's transactions pgbench logs: all of them when their number is not
    known or not much above `wanted`, else about `wanted` (two significant figures, rounded up),
    but at most LOG_SHARE_CAP of them when that still keeps half the wanted number."""
    if not expected_transactions or expected_transactions <= 1.25 * wanted:
        return 1.0
    rate = wanted / expected_transactions
    if rate > LOG_SHARE_CAP:
        rate = max(LOG_SHARE_CAP, (wanted // 2) / expected_transactions)
    scale: float = 10.0 ** (1 - math.floor(math.log10(rate)))
    return min(1.0, math.ceil(rate * scale) / scale)


# An unmeasured run before a variant's first step, when the log's sampling rate is pgknee's to
# choose: its TPS sets the rate. Every step length gets it: a short step's full log cost more than
# the probe (17% of pgbench's CPU per transaction, some 5% of the TPS on a shared 2-core machine).
# bench/observer_effect.py gives bare pgbench the same warm-up.
PROBE_S = 3
