"""A whole run as analysis reads it (RunData), from a store opened by store.db: read once, its
stored plan checked again as a plan from flags is."""

from __future__ import annotations

import json

from pgknee.base.errors import StoreError, UserError
from pgknee.model.results import RunData, RunRecord
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
    return RunData(
        run=run, env=store.environment(run.run_id), commands=store.commands(run.run_id), steps=steps,
        scripts={i: store.step_scripts(i) for i in ids}, failures={i: store.step_failures(i) for i in ids},
        waits={i: store.wait_counts([i], bench, "client") for i in ids},
        waits_bg={i: store.wait_counts([i], bench, "background") for i in ids},
        snaps={i: s[:3] for i, s in snaps.items()}, hidden={i: s[3] for i, s in snaps.items() if s[3]},
        busy={i: b for i in ids if (b := store.busy_sessions(i, bench)) is not None},
        facts={i: f for i in ids if (f := store.step_facts(i)).records},
        progress={i: pr for i in ids if (pr := store.progress(i))},
        statement_mix=store.statement_mix(run.run_id), agents=store.step_agents(run.run_id), records=records)


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
