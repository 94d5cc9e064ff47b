"""The application's idle time inside its transactions as the replay's pgbench sleeps it (pure):
pgbench sleeps between the statements, inside BEGIN ... COMMIT, for an idle time drawn per
transaction from the observed distribution (its percentiles from the samples, scaled to the mean
of pg_stat_database's idle_in_transaction_time per BEGIN), less the client's own turnaround."""

from __future__ import annotations

from collections.abc import Sequence

from pgknee.workloads.captured import transactions as tx

# a client's own time between two statements of its transaction, or between two transactions, on
# a loaded machine (pgbench's 0.29-0.38 ms on 2 CPUs): not slept again by the replay, whose pgbench spends it
TURNAROUND_MS = 0.5
# the idle time's quantile function in the script: these points (per cent), linear between them
POINTS = (0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 99, 100)


def idle_points(values: Sequence[tuple[float, float]], mean_ms: float | None) -> list[float]:
    """The idle time per transaction (ms) at POINTS, from the sampled (idle s, weight) pairs,
    scaled so that their mean is the counters' `mean_ms`; [] when nothing was seen."""
    if not values:
        return [round(mean_ms, 3)] * len(POINTS) if mean_ms else []
    pts = [tx.weighted_quantile(values, p / 100) * 1000.0 for p in POINTS]
    sampled = tx.weighted_mean([(v * 1000.0, w) for v, w in values])
    scale = mean_ms / sampled if mean_ms is not None and sampled > 0 else 1.0
    return [round(p * scale, 3) for p in pts]


def mean_of(points_ms: Sequence[float]) -> float:
    """The mean of the quantile function through `points_ms` at POINTS (linear between them)."""
    if len(points_ms) != len(POINTS):
        return 0.0
    return sum((points_ms[i] + points_ms[i + 1]) / 2 * (POINTS[i + 1] - POINTS[i])
               for i in range(len(POINTS) - 1)) / 100


def sleep_lines(points_ms: Sequence[float], gaps: int, slept: float = 1.0) -> list[str]:
    """pgbench lines that draw the transaction's idle time from the quantile function through
    `points_ms` and split `slept` of it (a share: the rest is the client's own turnaround, which the
    replay's pgbench spends as well) over `gaps` sleeps (:pgknee_gap_us each)."""
    us = [max(0, round(p * 1000)) for p in points_ms]
    arms = []
    for (p0, v0), (p1, v1) in zip(zip(POINTS, us, strict=True), zip(POINTS[1:], us[1:], strict=True), strict=False):
        lo, hi = p0 * 10, p1 * 10  # per mille
        arms.append(f"when :pgknee_u < {hi} then {v0} + ({v1 - v0}) * (:pgknee_u - {lo}) / {hi - lo}")
    per_mille = min(1000, max(0, round(slept * 1000)))
    return ["\\set pgknee_u random(0, 999)",
            f"\\set pgknee_idle_us case {' '.join(arms)} else {us[-1]} end",
            f"\\set pgknee_gap_us :pgknee_idle_us / {max(1, gaps)}" if per_mille == 1000 else
            f"\\set pgknee_gap_us :pgknee_idle_us * {per_mille} / {1000 * max(1, gaps)}"]


def turnaround_ms(think_ms: float | None) -> float:
    """A client's own time between two statements: what the application's sessions were seen to
    pause between two transactions when they ran them back to back (pgbench's 0.35-0.39 ms on 2
    CPUs), TURNAROUND_MS at most (an application that works between its transactions)."""
    return min(TURNAROUND_MS, think_ms) if think_ms is not None and think_ms > 0 else TURNAROUND_MS


def share_slept(points_ms: Sequence[float], statements: float, turn_ms: float) -> float:
    """The share of a transaction's idle time the replay sleeps: all of it less the client's own
    turnarounds, one before each statement and one before COMMIT (statements + 1), which the
    replay's pgbench spends too; the draws scaled by it, so that their mean is the rest and their
    shape the application's. 0 when the turnarounds account for all of it: a client that runs
    its statements back to back (pgbench, a batch) idles only its turnarounds and its waits for
    a CPU, and sleeping any of that again holds the transaction longer (an order entry run by
    pgbench idled 0.33 ms between statements on a loaded 2-CPU machine; replayed with that slept
    too, it ran at 160 TPS against 530; with 0.5 ms taken out of each gap's draw but the rest
    slept, 307-370 against 455-527; a social network's transactions of one statement idled 0.48
    ms, two turnarounds of pgbench's, and held 14% longer replayed with the draws' tail slept)."""
    mean = mean_of(points_ms)
    return max(0.0, 1.0 - (statements + 1) * turn_ms / mean) if mean > 0 else 0.0
