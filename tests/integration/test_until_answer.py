"""pgknee run --until-answer on a real server: the counts chosen as the run goes, within the
budget, stored as a run that show and recommend read as any other."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, QUICK, SCALE, dsn_of, pgknee, sql

BUDGET_S = 30


@pytest.mark.slow
def test_an_adaptive_sweep_stays_in_its_budget_and_stores_a_run_like_any_other(server: EmbeddedCluster,
                                                                                 tmp_path: Path) -> None:
    store, js = tmp_path / "u.db", tmp_path / "u.json"
    t0 = time.monotonic()
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_until", "--scale", SCALE, "--until-answer",
               "--budget", f"{BUDGET_S}s", "--clients", "1:6:1", "--duration", "2s", "--store", str(store),
               "--no-waits", *QUICK, env=APP_ENV, cwd=tmp_path)
    wall = time.monotonic() - t0
    assert r.code == 0, r.err
    assert wall <= BUDGET_S + 3, wall  # the budget counts the whole command; a step that would overrun is not started
    assert "until-answer: looking for the answer between 1 and 6 clients (grid 1,2,3,4,5,6), budget 0m30s; " \
           "coarse sweep first: 1, 2, 4, 6" in r.err
    assert "until-answer: stopped after " in r.err
    (plan_json, planned, status), = sql(store, "SELECT plan_json, steps_planned, status FROM runs")
    plan = json.loads(plan_json)
    steps = sql(store, "SELECT clients, rep, status FROM steps ORDER BY seq")
    assert status == "completed" and plan["until_answer"] is True and plan["budget_s"] == BUDGET_S
    assert plan["clients"] == [c for c, rep, _ in steps if rep == 1] and planned == len(steps)  # what ran
    assert all(1 <= c <= 6 and st == "completed" for c, _, st in steps)
    assert [c for c, _, _ in steps[:2]] == [1, 2]  # the coarse sweep first
    (stopped,), = sql(store, "SELECT value FROM run_environment WHERE key = 'until_answer.stopped'")
    assert stopped.split(":")[0] in ("answer known", "budget spent", "no better step to take", "no answer possible")
    assert f"until-answer: stopped after {len(steps)} steps" in r.err and stopped in r.err
    for c, _, _ in steps:
        assert f"c{c}" in r.out  # the tables, as for any run
    shown = pgknee("show", "last", "--store", str(store), "--no-waits")
    assert shown.code == 0 and "completed" in shown.out and f"({len(steps)}/{len(steps)} steps)" in shown.out
    rec = pgknee("recommend", "last", "--store", str(store), "--json", str(js))
    assert rec.code == 0, rec.err
    (answer,) = json.loads(js.read_text())["recommendations"]
    assert answer["verdict"] in ("peaks", "levels-off", "saturated", "not-identified",
                                 "no-count-meets-target", "withheld",
                                 "not-enough-data")
