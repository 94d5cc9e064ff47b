"""pgknee export: a stored run as CSV (one row per step, or one row per sampled point of each
series) or as OpenMetrics text (prometheus_client's exposition: metric families pgknee_*, labels
run, variant, clients, rep; the sampled series with their timestamps; '# EOF' at the end).

Series (the bench phase, as the store's reads give them): the machine's /proc samples, pgbench's
per-second progress, the pooler's SHOW POOLS samples; per step: throughput, latency, counts, and
the sampled activity (average active sessions, in all and per wait event), stamped at the end of
the step's bench phase."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pgknee.analyze.view import RunView
from pgknee.analyze.waits import sampled_aas, total_aas
from pgknee.model.results import StepRecord
from pgknee.model.samples import OsSample

STEP_COLUMNS = ("run", "variant", "clients", "rep", "seq", "status", "started_at", "bench_start", "bench_end",
                "duration_s", "threads", "protocol", "pooler_kind", "pool_mode", "pool_size", "idle", "tps",
                "tps_pgbench", "tps_db", "transactions", "failed", "retried", "retries", "lat_avg_ms",
                "lat_stddev_ms", "lat_p50_ms", "lat_p95_ms", "lat_p99_ms", "lat_max_ms", "snapshots", "aas",
                "cpu_busy_pct", "client_cpu_pct")
SAMPLE_COLUMNS = ("run", "variant", "clients", "rep", "series", "metric", "detail", "timestamp", "value")
LATENCY = (("mean", "lat_avg_ms"), ("stddev", "lat_stddev_ms"), ("p50", "lat_p50_ms"), ("p95", "lat_p95_ms"),
           ("p99", "lat_p99_ms"), ("max", "lat_max_ms"))


@dataclass(frozen=True)
class Point:
    """One value of a metric family: its labels besides the step's, a timestamp (epoch s) or None."""

    family: str  # without the pgknee_ prefix
    extra: tuple[tuple[str, str], ...]
    value: float
    timestamp: float | None


# what each family is: (OpenMetrics type, unit, help); the CSV's series is the family's first word
FAMILIES: dict[str, tuple[str, str, str]] = {
    "step_tps": ("gauge", "", "transactions per second of the step (pgbench's log)"),
    "step_latency_seconds": ("gauge", "seconds", "transaction latency of the step, by statistic"),
    "step_transactions": ("gauge", "", "transactions the step completed"),
    "step_failed_transactions": ("gauge", "", "transactions that failed (serialization, deadlock)"),
    "step_retried_transactions": ("gauge", "", "transactions retried (--max-tries)"),
    "step_active_sessions": ("gauge", "", "average active client sessions (sampled pg_stat_activity)"),
    "step_wait_active_sessions": ("gauge", "", "average active client sessions by wait event"),
    "os_cpu_percent": ("gauge", "", "the machine's CPU by mode, % of all CPUs"),
    "os_load1": ("gauge", "", "1-minute load average"),
    "os_context_switches_per_second": ("gauge", "", "context switches per second"),
    "os_memory_available_bytes": ("gauge", "bytes", "MemAvailable"),
    "os_client_cpu_percent": ("gauge", "", "pgbench's CPU, % of one core"),
    "os_pooler_cpu_percent": ("gauge", "", "the managed pooler's busiest process's CPU, % of one core"),
    "progress_tps": ("gauge", "", "pgbench's per-second progress report: TPS"),
    "pooler_clients": ("gauge", "", "the pooler's client connections (SHOW POOLS), by state"),
    "pooler_servers": ("gauge", "", "the pooler's server connections (SHOW POOLS), by state"),
    "pooler_maxwait_seconds": ("gauge", "seconds", "the longest wait of a client in the pooler's queue"),
}


def step_labels(view: RunView, s: StepRecord) -> dict[str, str]:
    return {"run": view.data.run.run_id, "variant": s.variant, "clients": str(s.clients), "rep": str(s.rep)}


def _os_points(o: OsSample) -> Iterator[Point]:
    for mode in ("user", "nice", "system", "iowait", "irq", "steal", "idle"):
        yield Point("os_cpu_percent", (("mode", mode),), getattr(o, f"cpu_{mode}"), o.epoch)
    yield Point("os_load1", (), o.load1, o.epoch)
    yield Point("os_context_switches_per_second", (), o.ctx_per_s, o.epoch)
    yield Point("os_memory_available_bytes", (), o.mem_available_kb * 1024.0, o.epoch)
    if o.client_cpu_pct is not None:
        yield Point("os_client_cpu_percent", (), o.client_cpu_pct, o.epoch)
    if o.pooler_cpu_pct is not None:
        yield Point("os_pooler_cpu_percent", (), o.pooler_cpu_pct, o.epoch)


def step_points(view: RunView, s: StepRecord) -> Iterator[Point]:
    """The step's own figures, stamped at the end of its bench phase."""
    at = s.bench_end
    for family, value in (("step_tps", s.tps), ("step_transactions", s.transactions),
                          ("step_failed_transactions", s.failed), ("step_retried_transactions", s.retried)):
        if value is not None and s.status == "completed":
            yield Point(family, (), float(value), at)
    for stat, attr in LATENCY:
        if (v := getattr(s, attr)) is not None:
            yield Point("step_latency_seconds", (("stat", stat),), v / 1000.0, at)
    if view.step_snapshots(s):
        waits = view.step_waits(s)
        yield Point("step_active_sessions", (), total_aas(waits), at)
        for w in waits:
            yield Point("step_wait_active_sessions", (("wait_event_type", w.wait_event_type),
                                                      ("wait_event", w.wait_event)), w.aas, at)


def sample_points(view: RunView, s: StepRecord) -> Iterator[Point]:
    """The step's sampled series, each point with its timestamp."""
    d = view.data
    for o in d.client_os(s.step_id):
        yield from _os_points(o)
    for t_s, tps in d.progress.get(s.step_id, []):
        if s.bench_start is not None:
            yield Point("progress_tps", (), tps, s.bench_start + t_s)
    pooler = d.pooler(s.step_id)
    for ps in pooler.samples if pooler is not None else []:
        for state in ("active", "waiting"):
            yield Point("pooler_clients", (("state", state),), getattr(ps, f"cl_{state}"), ps.epoch)
        for state in ("active", "idle", "used", "login"):
            yield Point("pooler_servers", (("state", state),), getattr(ps, f"sv_{state}"), ps.epoch)
        yield Point("pooler_maxwait_seconds", (), ps.maxwait_us / 1e6, ps.epoch)


def _cpu(samples: Iterable[OsSample]) -> tuple[float | None, float | None]:
    bench = [o for o in samples if o.phase == "bench"]
    if not bench:
        return None, None
    clients = [o.client_cpu_pct for o in bench if o.client_cpu_pct is not None]
    return (sum(100.0 - o.cpu_idle for o in bench) / len(bench),
            sum(clients) / len(clients) if clients else None)


def steps_csv(view: RunView) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(STEP_COLUMNS)
    for s in view.data.steps:
        n = view.step_snapshots(s)
        row: dict[str, Any] = {**step_labels(view, s), **{c: getattr(s, c, None) for c in STEP_COLUMNS[4:]}}
        row["snapshots"] = n
        row["aas"] = sampled_aas(view.step_waits(s), n)
        row["cpu_busy_pct"], row["client_cpu_pct"] = _cpu(view.data.client_os(s.step_id))
        w.writerow([row[c] for c in STEP_COLUMNS])  # csv writes None as an empty field
    return out.getvalue()


def samples_csv(view: RunView) -> str:
    """Long format: one row per point of every series (and the steps' own figures, stamped at
    their end): run, variant, clients, rep, series, metric, detail (its other labels), timestamp, value."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(SAMPLE_COLUMNS)
    for s in view.data.steps:
        labels = step_labels(view, s)
        for p in (*step_points(view, s), *sample_points(view, s)):
            w.writerow([*labels.values(), p.family.split("_")[0], p.family,
                        ";".join(f"{k}={v}" for k, v in p.extra), p.timestamp,
                        p.value])
    return out.getvalue()


def openmetrics(view: RunView) -> bytes:
    """The run in the OpenMetrics text format (prometheus_client writes it; '# EOF' last)."""
    from prometheus_client.core import GaugeMetricFamily, Metric
    from prometheus_client.openmetrics.exposition import generate_latest
    from prometheus_client.registry import Collector, CollectorRegistry

    families: dict[str, list[tuple[dict[str, str], Point]]] = {name: [] for name in FAMILIES}
    for s in view.data.steps:
        labels = step_labels(view, s)
        for p in (*step_points(view, s), *sample_points(view, s)):
            families[p.family].append((labels, p))

    class _Run(Collector):
        def collect(self) -> Iterable[Metric]:
            for name, points in families.items():
                if not points:
                    continue
                _kind, unit, doc = FAMILIES[name]
                keys = ["run", "variant", "clients", "rep", *dict(points[0][1].extra)]
                m = GaugeMetricFamily(f"pgknee_{name}", doc, labels=keys, unit=unit)
                for labels, p in sorted(points, key=lambda lp: (lp[1].extra, _order(lp))):
                    m.add_metric([*labels.values(), *dict(p.extra).values()], p.value, timestamp=p.timestamp)
                yield m

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Run())
    text: bytes = generate_latest(registry)  # type: ignore[no-untyped-call]
    return text


def _order(lp: tuple[dict[str, str], Point]) -> tuple[Any, ...]:
    """A series' points together, in time order (OpenMetrics wants them so)."""
    labels, p = lp
    return (labels["variant"], int(labels["clients"]), int(labels["rep"]), p.timestamp or 0.0)
