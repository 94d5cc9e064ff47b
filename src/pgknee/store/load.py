"""A whole run as analysis reads it (RunData), from a store opened by store.db: read once, its
stored plan checked again as a plan from flags is."""

from __future__ import annotations

import dataclasses
import json

from pgknee.base.errors import StoreError, UserError
from pgknee.model.results import PoolerRecord, RunData, RunRecord, StepRecord
from pgknee.model.samples import OsSamples, PoolerFacts, PoolerSamples, ServerOsSamples, WaitSampling
from pgknee.model.server import RECORDS, DatabaseStep
from pgknee.plan import plan_from_stored
from pgknee.store.db import Store

__all__ = ["load_run"]


def load_run(store: Store, ref: str) -> RunData:
    """Everything analysis needs about one run, read once. Its stored plan passes the checks a
    plan from flags passes (a store is a file: it may have been changed since pgknee wrote it)."""
    run = store.resolve_run(ref)
    _check_plan(run)
    steps = store.steps(run.run_id)
    ids = [s.step_id for s in steps]
    bench = ("bench",)
    snaps = {i: store.snapshot_stats([i], bench) for i in ids}
    records = store.records(ids)
    data = RunData(
        run=run, env=store.environment(run.run_id), commands=store.commands(run.run_id), steps=steps,
        scripts={i: store.step_scripts(i) for i in ids}, failures={i: store.step_failures(i) for i in ids},
        pgdb={}, os={}, waits={i: store.wait_counts([i], bench, "client") for i in ids},
        waits_bg={i: store.wait_counts([i], bench, "background") for i in ids},
        snaps={i: s[:3] for i, s in snaps.items()}, hidden={i: s[3] for i, s in snaps.items() if s[3]},
        busy={i: b for i in ids if (b := store.busy_sessions(i, bench)) is not None},
        facts={i: f for i in ids if (f := store.step_facts(i)).records},
        progress={i: pr for i in ids if (pr := store.progress(i))},
        statement_mix=store.statement_mix(run.run_id), agents=store.step_agents(run.run_id), records=records)
    return _by_field(data, steps)


def _by_field(data: RunData, steps: list[StepRecord]) -> RunData:
    """The records the analysis still reads by RunData's fields (pgdb, os, server_os, pooler,
    wait_sampling, server), taken from the records read by kind: the store reads each kind once."""
    ids = [s.step_id for s in steps]
    pooled = [s.step_id for s in steps if s.pooler_kind is not None]
    return dataclasses.replace(
        data, pgdb={i: data.of(i, DatabaseStep) or DatabaseStep() for i in ids},
        os={i: list(r.rows) if (r := data.of(i, OsSamples)) else [] for i in ids},
        server_os={i: list(sv.rows) for i in ids if (sv := data.of(i, ServerOsSamples))},
        wait_sampling={i: w for i in ids if (w := data.of(i, WaitSampling))},
        server={i: srv for i in ids if (srv := tuple(r for r in data.records.get(i, ()) if isinstance(r, RECORDS)))},
        pooler={i: _pooler(data, i) for i in pooled})


def _pooler(data: RunData, step_id: int) -> PoolerRecord:
    samples = data.of(step_id, PoolerSamples)
    return PoolerRecord(list(samples.rows) if samples else [], data.of(step_id, PoolerFacts) or PoolerFacts(),
                        list(samples.processes) if samples else [])


def _check_plan(run: RunRecord) -> None:
    try:
        plan = json.loads(run.plan_json)
        if not isinstance(plan, dict):
            raise UserError("the stored plan is not one pgknee wrote")
        clients = plan.get("clients") or [1]
        plan_from_stored(plan, tuple(clients) if isinstance(clients, list) else (1,))
    except (UserError, ValueError) as e:
        raise StoreError(f"run {run.run_id} cannot be read: {getattr(e, 'message', 'its plan is not JSON')}",
                         "this store was changed by something other than pgknee") from None
