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
    pts = [(tx.weighted_quantile(values, p / 100) or 0.0) * 1000.0 for p in POINTS]
    sampled = tx.weighted_mean([(v * 1000.0, w) for v, w in values]) or 0.0
    scale = mean_ms / sampled if mean_ms is not None and sampled > 0 else 1.0
    return [round(p * scale, 3) for p in pts]


def mean_of(points_ms: Sequence[float]) -> float:
    """The mean of the quantile function through `points_ms` at POINTS (linear between them)."""
    if len(points_ms) != len(POINTS):
        return 0.0
    return sum((points_ms[i] + points_ms[i + 1]) / 2 * (POINTS[i + 1] - POINTS[i])
               for i in range(len(POINTS) - 1)) / 100


def sleep_lines(points_ms: Sequence[float], gaps: int, turnaround_us: int = 0) -> list[str]:
    """pgbench lines that draw the transaction's idle time from the quantile function through
    `points_ms` and split it over `gaps` sleeps (:pgknee_gap_us each), each less `turnaround_us`:
    the client's own time between two statements, which the replay's pgbench spends as well."""
    us = [max(0, round(p * 1000)) for p in points_ms]
    arms = []
    for (p0, v0), (p1, v1) in zip(zip(POINTS, us, strict=True), zip(POINTS[1:], us[1:], strict=True), strict=False):
        lo, hi = p0 * 10, p1 * 10  # per mille
        arms.append(f"when :pgknee_u < {hi} then {v0} + ({v1 - v0}) * (:pgknee_u - {lo}) / {hi - lo}")
    return ["\\set pgknee_u random(0, 999)",
            f"\\set pgknee_idle_us case {' '.join(arms)} else {us[-1]} end",
            f"\\set pgknee_gap_us :pgknee_idle_us / {max(1, gaps)}" if turnaround_us <= 0 else
            f"\\set pgknee_gap_us greatest(0, :pgknee_idle_us / {max(1, gaps)} - {turnaround_us})"]


def turnaround_us(points_ms: Sequence[float], gaps: int) -> int:
    """The client's own time between two statements of a transaction, in the idle the server saw:
    TURNAROUND_MS a gap, whatever the mean (0 when no idle was seen). A client that runs its
    statements back to back (pgbench, a batch) idles only its turnaround and its waits for a CPU,
    and the replay's pgbench spends both too: sleeping them again holds the transaction longer
    (an order entry run by pgbench idled 0.33 ms between statements on a loaded 2-CPU machine;
    replayed with that slept too, it ran at 160 TPS against 530; with the mean taken out of each
    draw but its spread slept, 307-370 against 455-527, the spread being those waits as well).
    Idle beyond it is the application's own work, slept."""
    return round(TURNAROUND_MS * 1000) if gaps > 0 and mean_of(points_ms) > 0 else 0
