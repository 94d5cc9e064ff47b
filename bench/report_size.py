"""How big and how slow is the HTML report of a long run? Prints the file size, the time to
build it, and the markdown export's, for a synthetic run shaped like article 002's linear
sweep: 20 client counts x 3 repetitions x 2 variants, 600 s steps (pgbench progress every
second), OS samples every second, 10 Hz wait samples. The target: a few MB at most.

    .venv/bin/python bench/report_size.py [--steps-seconds 600] [--counts 20]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time

from pgknee.analyze.run import build
from pgknee.plan import Plan, parse_variant
from pgknee.report import document, html, markdown
from pgknee.types import OsSample, RunData, RunRecord, StepRecord


def synthetic(counts: int, reps: int, seconds: int) -> RunData:
    rnd = random.Random(7)
    clients = [50 * (i + 1) for i in range(counts)]
    variants = ["direct", "pooled"]
    plan = Plan(clients=tuple(clients), duration_s=seconds, reps=reps,
                variants=tuple(parse_variant(v, "prepared") for v in variants))
    run = RunRecord("20260101-000000-bench", "2026-01-01 00:00:00", None, "completed", None, "tpcb", "embedded",
                    "pgknee@/tmp:5432/pgknee", json.dumps(plan.to_dict()), counts * reps * len(variants))
    steps, os_, waits, snaps, progress = [], {}, {}, {}, {}
    t = 1.7e9
    sid = 0
    for c in clients:
        for rep in range(1, reps + 1):
            for v in variants:
                sid += 1
                tps = 1000 * c / (1 + 0.05 * (c - 1) + 0.00002 * c * (c - 1)) * rnd.uniform(0.9, 1.1)
                lat = 1000 * c / tps
                steps.append(StepRecord(
                    step_id=sid, run_id=run.run_id, seq=sid, variant=v, clients=c, rep=rep, threads=2,
                    protocol="prepared", duration_s=seconds, warmup_s=0, status="completed", status_reason=None,
                    started_at="2026-01-01", bench_start=t, bench_end=t + seconds, transactions=int(tps * seconds),
                    failed=0, retried=0, retries=0, tps=tps, lat_avg_ms=lat, lat_stddev_ms=lat / 2,
                    lat_min_ms=lat / 10, lat_p50_ms=lat, lat_p95_ms=lat * 2, lat_p99_ms=lat * 3, lat_max_ms=lat * 9,
                    tps_pgbench=tps, lat_avg_pgbench_ms=lat, conn_time_ms=10.0, tps_db=tps))
                progress[sid] = [(float(s), tps * rnd.uniform(0.8, 1.2)) for s in range(1, seconds + 1)]
                os_[sid] = [OsSample(t + s, "bench", 50, 0, 30, 1, 5, 1, 13, 2 + c / 100, 20000, 3 + c // 50, 0,
                                     8 << 20, 4 << 20, 1 << 20, 2 << 20, 20.0) for s in range(seconds)]
                n = seconds * 10
                waits[sid] = [("CPU", "running", n), ("LWLock", "WALWrite", n * c // 100), ("IO", "WALSync", n // 2),
                              ("Client", "ClientRead", n // 3), ("Lock", "transactionid", n // 10)]
                snaps[sid] = (n, float(c), 0.9)
                t += seconds + 5
    return RunData(run=run, env={"host.cpus": "2", "server.version": "15.18", "pgbench.version": "15.18"},
                   commands=[], steps=steps, scripts={}, failures={}, pgdb={}, os=os_, waits=waits, waits_bg={},
                   snaps=snaps, progress=progress)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps-seconds", type=int, default=600)
    p.add_argument("--counts", type=int, default=20)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--repeat", type=int, default=3, help="builds to time (median reported)")
    a = p.parse_args()
    data = synthetic(a.counts, a.reps, a.steps_seconds)
    view = build(data)
    times, size, mtimes, msize = [], 0, [], 0
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        text = html.render(document.build([view]))
        times.append(time.perf_counter() - t0)
        size = len(text.encode())
        t0 = time.perf_counter()
        md, files = markdown.render(document.build([view]), "r_files")
        mtimes.append(time.perf_counter() - t0)
        msize = len(md.encode()) + sum(len(b) for b in files.values())
    points = sum(len(v) for v in data.progress.values())
    print(f"run: {len(data.steps)} steps of {a.steps_seconds} s, {points:,} progress points")
    print(f"html: {size / 1e6:.2f} MB, built in {statistics.median(times):.1f} s "
          f"(min {min(times):.1f}, max {max(times):.1f}, {a.repeat} builds)")
    print(f"markdown + PNG charts: {msize / 1e6:.2f} MB, built in {statistics.median(mtimes):.1f} s")
    print(f"per step: {size / len(data.steps) / 1e3:.1f} kB of HTML; target: a few MB at most "
          f"({'met' if size < 5e6 else 'NOT met'})")
    return 0 if math.isfinite(size) else 1


if __name__ == "__main__":
    raise SystemExit(main())
