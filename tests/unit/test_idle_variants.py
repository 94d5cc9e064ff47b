"""Idle sessions and server settings as variants: specs, plan rules, the memory analysis,
its table, and variants read back from a stored plan (no server)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from builders import make_run_data, renew

from pgknee.analyze.run import build
from pgknee.base.errors import UserError
from pgknee.model.facts import StepFacts
from pgknee.model.server import DatabaseStep
from pgknee.plan import Plan, PoolerSpec, TargetSpec, Variant, parse_variant, parse_variants, variant_from_dict
from pgknee.report.side_by_side import idle_memory_table
from pgknee.report.terminal import render


@pytest.mark.parametrize(("spec", "idle", "kind", "settings"), [
    ("idle=256", 256, "quiet", ()),
    ("idle=1000:idle_kind=catalog", 1000, "catalog", ()),
    ("idle=2048:idle_kind=sleep", 2048, "sleep", ()),
    ("max_connections=5000", 0, "quiet", (("max_connections", "5000"),)),
    ("set.shared_buffers=1GB:max_connections=200", 0, "quiet", (("shared_buffers", "1GB"),
                                                                ("max_connections", "200"))),
])
def test_idle_and_settings_specs(spec: str, idle: int, kind: str, settings: tuple[tuple[str, str], ...]) -> None:
    v = parse_variant(spec, "prepared")
    assert (v.idle, v.idle_kind, v.settings) == (idle, kind, settings)


def test_lists_expand_into_variants() -> None:
    assert [v.idle for v in parse_variants("idle=0,256,1024:idle_kind=sleep", "prepared")] == [0, 256, 1024]
    assert [v.name for v in parse_variants("name=mc:max_connections=100,5000", "prepared")] == [
        "mc-max_connections100", "mc-max_connections5000"]


@pytest.mark.parametrize(("spec", "words"), [
    ("idle=x", "idle='x'"), ("idle=99999", "from 0 to 20000"), ("idle=5:idle_kind=nap", "unknown idle kind 'nap'"),
    ("set.Bad-Name=1", "is not a PostgreSQL setting name"),
])
def test_bad_idle_and_settings_specs(spec: str, words: str) -> None:
    with pytest.raises(UserError) as e:
        parse_variant(spec, "prepared")
    assert words in e.value.one_line()


def test_settings_variants_need_the_embedded_server() -> None:
    v = parse_variant("max_connections=500", "prepared")
    with pytest.raises(UserError, match="which pgknee does only on its embedded server"):
        Plan(variants=(v,), target=TargetSpec(dsn="host=db"))
    with pytest.raises(UserError, match="does not set port: it pgknee chooses the port"):
        Plan(variants=(parse_variant("set.port=1", "prepared"),))
    assert Plan(variants=(v,)).variants == (v,)


def test_estimate_counts_opening_idle_sessions_and_restarts() -> None:
    base = Plan(clients=(8,), duration_s=10, variants=(Variant("a"),))
    catalog = Plan(clients=(8,), duration_s=10, variants=(Variant("a"), Variant("b", idle=100, idle_kind="catalog")))
    # two steps of 14 s, plus 100 x 0.35 s to touch the catalogue and 11 s for statistics
    assert catalog.estimated_seconds() - 2 * base.estimated_seconds() == pytest.approx(35 + 11)


def test_variants_read_back_from_a_stored_plan() -> None:
    v = Variant("p", "extended", connect_per_txn=True, pooler=PoolerSpec(pool_size=5), idle=10, idle_kind="sleep",
                settings=(("max_connections", "300"),))
    stored = json.loads(json.dumps(dataclasses.asdict(v)))
    assert variant_from_dict(stored) == v
    assert variant_from_dict({**stored, "from_the_future": 1}) == v


def test_memory_analysis_and_table() -> None:
    data = make_run_data()
    steps = [dataclasses.replace(s, variant="idle=0" if s.clients == 2 else "idle=1000", clients=8,
                                 idle=0 if s.clients == 2 else 1000,
                                 idle_kind=None if s.clients == 2 else "catalog") for s in data.steps]
    facts = {}
    for s in steps:
        f = {"end.mem.memavailable_kb": 4_000_000.0 if s.idle else 6_000_000.0, "end.pss.server_kb": 300_000.0,
             "end.mem.cached_kb": 1_000_000.0}
        if s.idle:
            f.update({"before_idle.mem.memavailable_kb": 6_048_000.0, "end.pss.idle_backend_mean_kb": 2048.0,
                      "idle.open_s": 30.0})
        facts[s.step_id] = StepFacts.of_items(f)  # as the store reads them back
    pgdb = {s.step_id: DatabaseStep(blks_read=500.0, blks_hit=9500.0) for s in steps}
    view = build(renew(data, steps=steps, facts=facts, pgdb=pgdb))
    quiet, busy = view.groups
    assert quiet.memory is not None and busy.memory is not None
    assert quiet.memory.idle == 0 and busy.memory.idle == 1000 and busy.memory.idle_kind == "catalog"
    assert busy.memory.available_drop_mb is not None and busy.memory.available_drop_mb.value == 2000.0
    assert busy.memory.idle_backend_pss_mb is not None and busy.memory.idle_backend_pss_mb.value == 2.0
    assert busy.memory.hit_pct is not None and busy.memory.hit_pct.value == 95.0
    table = idle_memory_table(view)
    assert table is not None
    text = render([table], width=170)
    assert "1000 catalog" in text and "2,000" in text and "95.00" in text
    # TPS 200 (median of 180 and 220) against 100: +100.0% vs the variant without idle sessions
    assert "+100.0%" in text


def test_a_stored_plan_comes_back_with_other_counts() -> None:
    from pgknee.plan import WorkloadSpec, plan_from_stored

    original = Plan(clients=(1, 2, 3), duration_s=7, reps=2, target=TargetSpec(settings=(("max_connections", "300"),)),
                    workload=WorkloadSpec(name="select-only", scale=2, reinit=True),
                    variants=(Variant("a"), Variant("b", "extended", pooler=PoolerSpec(pool_size=5), idle=4)))
    stored = json.loads(json.dumps(original.to_dict()))
    again = plan_from_stored(stored, (6, 12))
    assert again.clients == (6, 12) and again.duration_s == 7 and again.reps == 2
    assert again.variants == original.variants and again.target.settings == original.target.settings
    assert again.workload.reinit is False and again.workload.scale == 2  # never reseeds what it extends
