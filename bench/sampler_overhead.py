"""What pgknee's collection costs the benchmark, interleaved second by second.

Run-to-run noise on a small shared machine is ±10-15% (sampler_overhead_runs.py
shows it), far too much to see a 1% effect by comparing whole runs. So this
script compares within runs: one long pgbench step (2 x CPUs clients, e-wallet
workload, prepared protocol) reports its TPS every second (-P 1), and pgknee's
samplers (pg_stat_activity at --interval with jitter, /proc at 1 s: the real
ActivitySampler and OsSampler) are switched on and off in pairs of seconds, the
order inside each pair drawn at random. Each pair gives one ratio
TPS(on) / TPS(off); the figure is the mean of the log-ratios over all pairs,
with a 95% interval.

A/A control: runs of the same shape in which both seconds of every pair are
"off" (labels drawn the same way) give the same statistic for no difference at
all: its spread is the noise floor. A/B and A/A runs alternate.

The first seconds of each run (connection set-up, ramp) are left out. The
server runs with steady settings (no autovacuum, no checkpoint, no commit
fsync inside the benchmark): a CPU-bound workload is the worst case for the
samplers, which compete with the server for the same cores.

    .venv/bin/python bench/sampler_overhead.py [--runs 3] [--seconds 60] [--interval 100ms]

(`make bench` runs it with the defaults: about 6 minutes.)
"""

from __future__ import annotations

import argparse
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

from pgknee.collect.activity import ActivitySampler
from pgknee.collect.osproc import OsSampler
from pgknee.collect.protocol import StepProcesses
from pgknee.driver.pgbench import PgbenchRun, find_pgbench, parse_progress_line, pgbench_version
from pgknee.plan import WorkloadSpec, parse_seconds
from pgknee.system import proc
from pgknee.targets.local import EmbeddedCluster, find_bindir
from pgknee.workloads.base import write_scripts
from pgknee.workloads.ewallet import EWallet

STEADY_SETTINGS = {"autovacuum": "off", "checkpoint_timeout": "1h", "max_wal_size": "16GB",
                   "synchronous_commit": "off"}
SKIP_SECONDS = 3


@dataclass(frozen=True)
class Pairs:
    kind: str  # 'A/B' or 'A/A'
    log_ratios: list[float]  # log(TPS first label / TPS second label), one per pair
    on_ms: list[float]  # sampler query times seen in this run


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=3, help="A/B runs, each followed by an A/A run (default 3)")
    p.add_argument("--seconds", type=int, default=60, help="length of each pgbench run (default 60)")
    p.add_argument("--interval", default="100ms", help="pg_stat_activity sampling interval (default 100ms)")
    p.add_argument("--seed", type=int, default=1, help="seed of the pair orders (default 1)")
    a = p.parse_args(argv)
    if a.runs < 1 or a.seconds < SKIP_SECONDS + 10:
        p.error(f"need --runs >= 1 and --seconds >= {SKIP_SECONDS + 10}")
    return a


class Switch:
    """Turns pgknee's samplers on and off between pgbench's progress reports."""

    def __init__(self, activity: ActivitySampler, os_sampler: OsSampler) -> None:
        self.activity, self.os_sampler = activity, os_sampler
        self.on = False
        self.query_ms: list[float] = []

    def set(self, on: bool) -> None:
        if on and not self.on:
            self.activity.begin_step(StepProcesses(0))
            self.activity.phase = "bench"
            self.os_sampler.begin_step(StepProcesses(0))
        elif not on and self.on:
            samples = next(iter(self.activity.end_step()), None)
            self.os_sampler.end_step()
            if samples is not None:
                self.query_ms.extend(s[-1] for s in samples.snapshots)
        self.on = on


def one_run(kind: str, run: PgbenchRun, env: dict[str, str], switch: Switch, rng: random.Random,
            run_as: proc.RunAs | None) -> Pairs:
    """One pgbench run; seconds labelled in pairs; returns the per-pair log-ratios."""
    n_pairs = (run.duration_s - SKIP_SECONDS) // 2
    # per pair: which second (0 or 1) carries the first label ('on' for A/B, 'x' for A/A)
    first_at = [rng.randrange(2) for _ in range(n_pairs)]

    def state_for(report: int) -> bool:  # progress report r covers the second (r - 1, r]
        k = report - 1 - SKIP_SECONDS
        if kind == "A/A" or k < 0 or k // 2 >= n_pairs:
            return False
        return (k % 2) == first_at[k // 2]

    tps: dict[int, float] = {}
    switch.query_ms = []
    switch.set(False)
    p = proc.spawn(run.argv(), env=env, run_as=run_as)
    with proc.guarded(p, first=signal.SIGINT):
        assert p.stderr is not None
        switch.set(state_for(1))
        for raw in p.stderr:
            point = parse_progress_line(raw.decode(errors="replace"))
            if point is None:
                continue
            second = round(point.t_s)
            tps[second] = point.tps  # TPS of the second that just ended, (second - 1, second]
            switch.set(state_for(second + 1))
        p.wait(timeout=30)
    switch.set(False)
    if p.returncode != 0:
        raise RuntimeError(f"pgbench exited with {p.returncode}")
    ratios = []
    for j, first in enumerate(first_at):
        # pair j covers seconds k = 2j, 2j+1 after the skip, i.e. progress reports s = SKIP + k + 1
        s0, s1 = SKIP_SECONDS + 2 * j + 1, SKIP_SECONDS + 2 * j + 2
        if s0 in tps and s1 in tps and tps[s0] > 0 and tps[s1] > 0:
            a, b = (tps[s0], tps[s1]) if first == 0 else (tps[s1], tps[s0])
            ratios.append(math.log(a / b))
    return Pairs(kind, ratios, list(switch.query_ms))


def interval_text(xs: Sequence[float]) -> str:
    m = statistics.fmean(xs)
    n = len(xs)
    half = float(stats.t.ppf(0.975, n - 1)) * statistics.stdev(xs) / math.sqrt(n) if n > 1 else math.inf
    return (f"{(math.exp(m) - 1) * 100:+.2f}%  (95% interval {(math.exp(m - half) - 1) * 100:+.2f}% .. "
            f"{(math.exp(m + half) - 1) * 100:+.2f}%, {len(xs)} pairs, per-pair sd {statistics.stdev(xs) * 100:.1f}%)")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cpus = os.cpu_count() or 1
    interval = parse_seconds(args.interval, "--interval")
    rng = random.Random(args.seed)
    pgbench = find_pgbench()
    _, version_num = pgbench_version(pgbench)
    with tempfile.TemporaryDirectory(prefix="pgknee-bench-") as tmp:
        cluster = EmbeddedCluster(find_bindir(), STEADY_SETTINGS)
        try:
            print(f"starting a throwaway PostgreSQL in {cluster.root} ...", flush=True)
            cluster.start()
            cluster.create_database()
            workload = EWallet(WorkloadSpec())
            with cluster.endpoint.connect("setup") as conn:
                workload.install(conn, say=lambda t: print(t, flush=True), run_pgbench=lambda args, schema: None)
                row = conn.execute("SHOW server_version_num").fetchone()
                server_num = int(row[0]) if row else 150000
            os.chmod(tmp, 0o711)  # pgbench runs as the server's user when this runs as root
            scripts = write_scripts([(s, s.text) for s in workload.sources()], Path(tmp), cluster.run_as)
            env = cluster.endpoint.child_env(Path(tmp), cluster.run_as)
            run = PgbenchRun(pgbench=pgbench, clients=2 * cpus, threads=cpus, duration_s=args.seconds,
                             protocol="prepared", scripts=tuple(scripts),
                             defines=tuple(workload.defines().items()), log_prefix=None, max_tries=3,
                             version_num=version_num, progress_s=1)
            activity = ActivitySampler(cluster.endpoint, server_num, interval)
            activity.start()
            os_sampler = OsSampler(1.0)
            os_sampler.start()
            switch = Switch(activity, os_sampler)
            print(f"{cpus} CPUs, {2 * cpus} clients, {args.runs} A/B + {args.runs} A/A runs of {args.seconds} s, "
                  f"sampling every {args.interval}", flush=True)
            results: list[Pairs] = []
            try:
                for i in range(args.runs):
                    for kind in ("A/B", "A/A") if i % 2 == 0 else ("A/A", "A/B"):
                        r = one_run(kind, run, env, switch, rng, cluster.run_as)
                        results.append(r)
                        print(f"run {len(results)}/{2 * args.runs} {kind}: {interval_text(r.log_ratios)}", flush=True)
            finally:
                activity.close()
                os_sampler.close()
        except (KeyboardInterrupt, subprocess.TimeoutExpired, RuntimeError) as e:
            print(f"stopped: {e or type(e).__name__}", file=sys.stderr, flush=True)
            return 130 if isinstance(e, KeyboardInterrupt) else 1
        finally:
            cluster.close()
    ab = [x for r in results if r.kind == "A/B" for x in r.log_ratios]
    aa = [x for r in results if r.kind == "A/A" for x in r.log_ratios]
    ms = [x for r in results for x in r.on_ms]
    per_s = 1 / interval
    print("\n=== pgknee sampler overhead (TPS with samplers vs without, paired seconds) ===")
    print(f"machine   {cpus} CPUs, {2 * cpus} clients, e-wallet, steady server settings")
    print(f"A/B       {interval_text(ab)}")
    print(f"A/A       {interval_text(aa)}   <- no difference at all: the noise floor")
    if ms:
        share = statistics.fmean(ms) / 1000 * per_s
        print(f"direct    {len(ms)} snapshots, {statistics.fmean(ms):.2f} ms each (round trip) at {per_s:.0f}/s: "
              f"at most {share * 100:.1f}% of one core, {share * 100 / cpus:.1f}% of the machine")
    cost = -(math.exp(statistics.fmean(ab)) - 1) * 100
    print(f"verdict   the samplers cost {cost:.2f}% TPS (target: at most 1%)")
    return 0


if __name__ == "__main__":
    # our threads: the samplers; the pgbench child is stopped by proc.guarded and proc's atexit
    threading.excepthook = lambda a: print(f"thread error: {a.exc_value}", file=sys.stderr)
    raise SystemExit(main())
