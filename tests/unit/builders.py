"""Shared builders for the unit tests (imported as `builders`): StepRecords and a synthetic RunData.

The synthetic run has two client counts (2 and 8) with two repetitions each:

  c2: TPS 100 / 100 (quiet), latency 20 ms, pgbench agrees, 10 + 10 snapshots
  c8: TPS 180 / 220 (noisy: 40 / 200 = 20 % spread), median 200 = +100 % vs c2;
      rep 2's pgbench summary says 200 tps (log says 220: +10 %, a tps-vs-pgbench warning)
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from pgknee.model.results import RunData, RunRecord, ScriptRow, StepRecord
from pgknee.model.samples import OsSample, OsSamples, PoolerFacts, PoolerSamples, ServerOsSamples, WaitSampling
from pgknee.model.server import RECORDS, DatabaseStep
from pgknee.plan import Plan

DATA = Path(__file__).resolve().parent.parent / "data"
BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_bench(name: str) -> ModuleType:
    """A script of bench/ as a module, for the tests of its statistics (the benches are not on the
    package's path); registered under its name, where its dataclasses look their module up."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def step(**kw: Any) -> StepRecord:
    """A completed step whose numbers all agree (every check 'ok'); override what a test needs."""
    base: dict[str, Any] = dict(
        step_id=1, run_id="20250101-000000-abcd", seq=1, variant="base", clients=2, rep=1, threads=2,
        protocol="prepared", duration_s=10.0, warmup_s=0.0, status="completed", status_reason=None,
        started_at="2025-01-01 00:00:00.000", bench_start=1000.0, bench_end=1010.0, transactions=1000, failed=0,
        retried=0, retries=0, tps=100.0, lat_avg_ms=20.0, lat_stddev_ms=5.0, lat_min_ms=1.0, lat_p50_ms=19.0,
        lat_p95_ms=30.0, lat_p99_ms=40.0, lat_max_ms=50.0, tps_pgbench=100.0, lat_avg_pgbench_ms=20.0,
        conn_time_ms=3.0, tps_db=100.0)
    base.update(kw)
    return StepRecord(**base)


def os_sample(**kw: Any) -> OsSample:
    base: dict[str, Any] = dict(
        epoch=1001.0, phase="bench", cpu_user=40.0, cpu_nice=0.0, cpu_system=10.0, cpu_iowait=0.0, cpu_irq=0.0,
        cpu_steal=0.0, cpu_idle=50.0, load1=1.5, ctx_per_s=1000.0, procs_running=3, procs_blocked=0,
        mem_total_kb=8 * 1024 * 1024, mem_available_kb=4 * 1024 * 1024, mem_free_kb=1024 * 1024,
        cached_kb=2 * 1024 * 1024, client_cpu_pct=50.0)
    base.update(kw)
    return OsSample(**base)


def script_row(no: int, name: str, weight: int, tx: int, tps: float, avg: float, p95: float,
               failed: int = 0, retried: int = 0) -> ScriptRow:
    """A stored script row: stddev avg / 4, p50 avg x 0.9, p99 p95 x 1.5, max p95 x 2."""
    return ScriptRow(script_no=no, script=name, weight=weight, transactions=tx, failed=failed, retried=retried,
                     tps=tps, lat_avg_ms=avg, lat_stddev_ms=avg / 4, lat_p50_ms=avg * 0.9, lat_p95_ms=p95,
                     lat_p99_ms=p95 * 1.5, lat_max_ms=p95 * 2)


RUN_ID = "20250101-000000-abcd"


def make_run_data(**overrides: Any) -> RunData:
    plan = Plan(clients=(2, 8), duration_s=10, reps=2)
    run = RunRecord(run_id=RUN_ID, created_at="2025-01-01 00:00:00.000", finished_at="2025-01-01 00:01:00.000",
                    status="completed", status_reason=None, workload="ewallet", target_kind="embedded",
                    target_label="postgres@/tmp:5432/pgknee", plan_json=json.dumps(plan.to_dict()),
                    steps_planned=4)
    # Little's law holds for every step: tps x latency = clients
    steps = [
        step(step_id=1, seq=1, clients=2, rep=1, tps=100.0, tps_pgbench=100.0, tps_db=100.0, lat_avg_ms=20.0,
             transactions=1000),
        step(step_id=2, seq=2, clients=2, rep=2, tps=100.0, tps_pgbench=100.0, tps_db=100.0, lat_avg_ms=20.0,
             transactions=1000),
        step(step_id=3, seq=3, clients=8, rep=1, threads=4, tps=180.0, tps_pgbench=180.0, tps_db=180.0,
             lat_avg_ms=8000 / 180, lat_p95_ms=60.0, lat_p99_ms=80.0, lat_max_ms=90.0, transactions=1800),
        step(step_id=4, seq=4, clients=8, rep=2, threads=4, tps=220.0, tps_pgbench=200.0, tps_db=220.0,
             lat_avg_ms=8000 / 220, lat_p95_ms=70.0, lat_p99_ms=100.0, lat_max_ms=120.0, transactions=2200),
    ]
    data: dict[str, Any] = dict(
        run=run,
        env={"server.version": "17.2", "pgbench.version": "17.2", "host.cpus": "4", "host.mem_gb": "8.0"},
        commands=[],
        steps=steps,
        scripts={
            1: [script_row(0, "transfer", 60, 600, 60.0, 25.0, 40.0),
                script_row(1, "balance", 40, 400, 40.0, 12.0, 20.0)],
            2: [script_row(0, "transfer", 60, 610, 61.0, 27.0, 42.0),
                script_row(1, "balance", 40, 390, 39.0, 14.0, 22.0)],
            3: [script_row(0, "transfer", 60, 1080, 108.0, 50.0, 70.0, failed=1, retried=2),
                script_row(1, "balance", 40, 720, 72.0, 30.0, 45.0)],
            4: [script_row(0, "transfer", 60, 1320, 132.0, 40.0, 60.0),
                script_row(1, "balance", 40, 880, 88.0, 25.0, 35.0)],
        },
        failures={1: {}, 2: {}, 3: {}, 4: {}},
        # sampled AAS of step 1 = 15 / 10 snapshots = 1.5 = active_time 15 s / 10 s window
        pgdb={1: DatabaseStep(xact_commit=1000.0, active_time=15000.0), 2: DatabaseStep(), 3: DatabaseStep(),
              4: DatabaseStep()},
        os={1: [os_sample(epoch=1001.0, cpu_idle=50.0), os_sample(epoch=1002.0, cpu_user=70.0, cpu_idle=20.0,
                                                                  load1=2.5, mem_available_kb=3 * 1024 * 1024)],
            2: [os_sample(epoch=1021.0, cpu_idle=40.0, cpu_user=50.0)], 3: [], 4: []},
        waits={
            1: [("CPU", "running", 10), ("LWLock", "WALWrite", 5)],
            2: [("CPU", "running", 12), ("Lock", "transactionid", 3)],
            3: [("CPU", "running", 30), ("Lock", "transactionid", 20)],
            4: [("CPU", "running", 30), ("Lock", "transactionid", 40)],
        },
        waits_bg={1: [("Activity", "WalWriterMain", 10)], 2: [("Activity", "WalWriterMain", 10)], 3: [], 4: []},
        snaps={1: (10, 2.0, 0.5), 2: (10, 2.0, 0.5), 3: (20, 8.0, 0.6), 4: (20, 8.0, 0.6)},
    )
    data.update(overrides)
    kinds = {k: data.pop(k) for k in KINDS if k in data}
    return with_records(RunData(**data), **kinds)


# what each step measured, as the analysis reads it back (RunData.of and the methods over it), by the
# names the tests give it: pg_stat_database's change, the client's and the server's OS samples, a
# pooler's samples and facts, the server's WAL/checkpoint/I/O records, pg_wait_sampling's profile
KINDS = ("pgdb", "os", "server_os", "pooler", "server", "wait_sampling")


def with_records(data: RunData, **kinds: dict[int, Any]) -> RunData:
    """The run with these steps' records in place of what it held of each kind named (KINDS):
    pgdb {step: DatabaseStep}, os and server_os {step: [sample, ...]}, pooler {step: PoolerRecord},
    server {step: (record, ...)}, wait_sampling {step: WaitSampling}."""
    unknown = set(kinds) - set(KINDS)
    assert not unknown, unknown
    types = {"pgdb": (DatabaseStep,), "os": (OsSamples,), "server_os": (ServerOsSamples,),
             "pooler": (PoolerSamples, PoolerFacts), "server": RECORDS, "wait_sampling": (WaitSampling,)}
    gone = tuple(t for k in kinds for t in types[k])
    records = {i: [r for r in rs if not isinstance(r, gone)] for i, rs in data.records.items()}

    def made(kind: str, value: Any) -> tuple[Any, ...]:
        if kind == "os":
            return (OsSamples(tuple(value)),)
        if kind == "server_os":
            return (ServerOsSamples(tuple(value)),)
        if kind == "pooler":
            return (PoolerSamples(tuple(value.samples), processes=tuple(value.processes)), value.facts)
        return tuple(value) if kind == "server" else (value,)

    for kind, by_step in kinds.items():
        for i, value in by_step.items():
            records.setdefault(i, []).extend(made(kind, value))
    return replace(data, records={i: tuple(rs) for i, rs in records.items()})


def with_run(data: RunData, **kw: Any) -> RunData:
    return replace(data, run=replace(data.run, **kw))


def renew(data: RunData, **changes: Any) -> RunData:
    """dataclasses.replace for a RunData whose changes may name what its steps measured (KINDS)."""
    kinds = {k: changes.pop(k) for k in KINDS if k in changes}
    return with_records(replace(data, **changes), **kinds)
