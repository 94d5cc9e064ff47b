"""The ready plans parse, in both their full and their small-machine form."""

from __future__ import annotations

import pytest

from pgknee.base.errors import UserError
from pgknee.plan import load_plan_file, plan_from_values
from pgknee.scenarios import all_scenarios, find


def test_the_articles_experiments_are_there() -> None:
    names = {s.name: s for s in all_scenarios()}
    assert {"ewallet-pipeline", "connect-overhead", "linear-best-of-3", "pool-size", "pooler-placement"} <= set(names)
    assert names["ewallet-pipeline"].article.startswith("000")
    assert names["connect-overhead"].article.startswith("001")
    assert names["linear-best-of-3"].article.startswith("002")
    assert names["pooler-placement"].article.startswith("002")
    assert names["pool-size"].article.startswith("004")


@pytest.mark.parametrize("small", [False, True])
def test_every_scenario_is_a_valid_plan(small: bool) -> None:
    seen = set()
    for s in all_scenarios():
        seen.add(s.name)
        plan = plan_from_values({}, load_plan_file(str(s.path), small_machine=small))
        assert plan.clients and plan.duration_s >= 10, s.name
        if s.name == "linear-best-of-3":
            assert plan.summary == "best" and plan.reps == 3
            assert plan.clients == (tuple(range(10, 201, 10)) if small else tuple(range(50, 1001, 50)))
        if s.name == "connect-overhead":
            assert [v.connect_per_txn for v in plan.variants] == [False, True, True]
            assert [v.pooler.mode if v.pooler else None for v in plan.variants] == [None, None, "transaction"]
            assert plan.variants[2].pooler is not None and plan.variants[2].pooler.pool_size == (10 if small else 50)
            assert dict(plan.target.settings)["max_connections"] == "1100" and plan.variants[0].protocol == "simple"
        if s.name == "pool-size":
            assert plan.clients == (100,) and plan.reps == 3
            assert [v.pooler.pool_size for v in plan.variants if v.pooler] == [100, 20]
        if s.name == "pooler-placement":
            assert [v.pooler.placement for v in plan.variants if v.pooler] == ["server", "client"]
            assert all(v.connect_per_txn and v.pooler and v.pooler.mode == "session" for v in plan.variants)
        if s.name == "pipeline-rtt":
            assert [(v.pipeline, v.rtt_ms) for v in plan.variants] == [
                (p, r) for p in (False, True) for r in (0.0, 1.0, 5.0)]
        if s.name == "ewallet-pipeline":
            assert [v.pipeline for v in plan.variants] == [False, True]
            assert plan.duration_s == (20 if small else 60)
    # the checks above ran: none of them is skipped by a scenario renamed or gone
    assert {"linear-best-of-3", "connect-overhead", "pool-size", "pooler-placement", "ewallet-pipeline",
            "pipeline-rtt"} <= seen


def test_unknown_scenario() -> None:
    with pytest.raises(UserError, match="unknown scenario 'nope'"):
        find("nope")
