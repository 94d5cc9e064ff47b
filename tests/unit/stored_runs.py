"""Stored runs of known figures, written through the store's one writer (no server): for the
tests of the commands that read two runs (compare --fail-if) or export one."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pgknee.model.facts import StepFacts
from pgknee.model.results import LatencyStats, PgbenchSummary, StepMeasurement, StepResult
from pgknee.model.samples import OsSample, OsSamples
from pgknee.store.db import Store
from pgknee.store.writer import RunWriter


def store_run(path: Path, run_id: str, tps: Mapping[int, Sequence[float]], *, p99_factor: float = 1.0,
              variant: str = "base", os_rows: bool = False) -> None:
    """A completed run: per client count, one repetition per TPS given (interleaved as pgknee
    runs them: rep 1 of every count, then rep 2, ...); latency follows Little's law, p99 is
    3 x the mean x `p99_factor`."""
    store = Store(path)
    try:
        w = RunWriter(store, run_id)
        reps = max(len(v) for v in tps.values())
        plan = {"clients": sorted(tps), "reps": reps, "duration_s": 10}
        w.create_run(workload="ewallet", target_kind="embedded", target_label="postgres@/tmp:5432/pgknee",
                     plan=plan, steps_planned=sum(len(v) for v in tps.values()))
        w.set_environment({"host.cpus": "2", "server.version": "15.8", "setting.max_connections": "100",
                           "setting.superuser_reserved_connections": "3"})
        seq = itertools.count(1)
        for rep in range(reps):
            for clients, values in sorted(tps.items()):
                if rep < len(values):
                    _step(w, next(seq), clients, rep + 1, values[rep], p99_factor, variant, os_rows)
        w.finish_run("completed", None)
    finally:
        store.close()


def _step(w: RunWriter, seq: int, clients: int, rep: int, tps: float, p99_factor: float, variant: str,
          os_rows: bool) -> None:
    sid = w.begin_step({"seq": seq, "variant": variant, "clients": clients, "rep": rep, "threads": 1,
                        "protocol": "prepared", "duration_s": 10, "warmup_s": 0, "pipeline": 0,
                        "connect_per_txn": 0, "rate": None, "think_ms": 0.0, "pooler_kind": None,
                        "pool_mode": None, "pool_size": None, "pool_reserve": 0, "idle": 0, "idle_kind": None,
                        "settings_json": json.dumps({})})
    mean = 1000.0 * clients / tps
    lat = LatencyStats(int(tps * 10), mean, mean / 4, mean / 10, mean * 0.9, mean * 2, mean * 3 * p99_factor,
                       mean * 5)
    m = StepMeasurement(int(tps * 10), 0, 0, 0, tps, lat, ())
    start = 1_800_000_000.0 + 20 * seq
    rows = tuple(OsSample("bench", start + i, 40.0, 0.0, 10.0, 0.0, 0.0, 0.0, 50.0, 1.5, 1000.0,
                  3, 0, 8_000_000, 4_000_000, 1_000_000, 2_000_000, 50.0, None) for i in range(3)) if os_rows else ()
    w.write_step(StepResult(sid, "completed", None, 0, start, start + 10, PgbenchSummary(), m, tps, (), StepFacts(),
                            (OsSamples(rows),)))
