"""The network's arithmetic: round trips counted from pgbench scripts, the rtt variant keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import make_run_data, step, with_run

from pgknee.analyze.network import (
    gain_headline,
    network_bound,
    network_checks,
    network_reasons,
    network_rows,
    pipeline_gains,
    rtt_achieved,
)
from pgknee.analyze.run import build
from pgknee.base.errors import TargetError, UserError
from pgknee.driver.pgbench import pipeline_form
from pgknee.driver.roundtrips import per_transaction, round_trips
from pgknee.model.facts import Network, RelayEnd, StepFacts
from pgknee.model.keys import CheckId, CheckStatus
from pgknee.netsim.control import Relay, relayed, summarize, upstream_args
from pgknee.plan import Plan, Variant
from pgknee.plan.files import plan_from_values
from pgknee.plan.variants import parse_variants
from pgknee.targets.base import Endpoint

EWALLET = Path(__file__).resolve().parents[2] / "src" / "pgknee" / "workloads" / "ewallet"


def test_each_statement_is_a_round_trip_and_a_pipeline_one() -> None:
    transfer = (EWALLET / "transfer.sql").read_text()
    assert round_trips(transfer) == 6  # BEGIN, 2 UPDATE, 2 INSERT, END; \set none
    assert round_trips(pipeline_form(transfer, "transfer.sql")) == 1
    assert round_trips((EWALLET / "balance.sql").read_text()) == 1


def test_commands_spanning_lines_compound_commands_gset_and_quotes() -> None:
    script = ("SELECT 1;\nSELECT 2\n  FROM x;\n\\sleep 1ms\nSELECT 3 \\; SELECT 4;\n"
              "SELECT abalance FROM a\n  WHERE aid = 1 \\gset\nSELECT 5")
    assert round_trips(script) == 5
    assert round_trips("SELECT ';' -- ; a comment\n;\n") == 1
    assert round_trips("\\set a 1\n\\sleep 10ms\n") == 0


def test_round_trips_per_transaction_weighted_as_pgbench_picks() -> None:
    assert per_transaction([("BEGIN;\nSELECT 1;\nEND;", 60), ("SELECT 1;", 40)]) == pytest.approx(2.2)
    assert per_transaction([]) == 0.0


def test_rtt_variants_expand_and_the_flags_apply_where_none_is_set() -> None:
    vs = parse_variants("pipeline:rtt=0,1ms,5ms", "prepared")
    assert [(v.name, v.rtt_ms, v.pipeline) for v in vs] == [
        ("pipeline:rtt=0", 0.0, True), ("pipeline:rtt=1ms", 1.0, True), ("pipeline:rtt=5ms", 5.0, True)]
    plan = plan_from_values({"variants": ["normal", "pipeline:rtt=2ms"], "rtt": "1ms", "rtt_jitter": "200us"})
    assert [(v.rtt_ms, v.rtt_jitter_ms) for v in plan.variants] == [(1.0, 0.2), (2.0, 0.2)]
    assert [v.rtt_ms for v in plan_from_values({"rtt": "0,3ms"}).variants] == [0.0, 3.0]


@pytest.mark.parametrize("spec, says", [("rtt=1", "has no unit"), ("rtt=2s", "between 0 and 1000 ms"),
                                        ("rtt_jitter=1ms", "needs a round trip"), ("rtt=x", "not a duration")])
def test_bad_rtt_is_refused_in_one_line(spec: str, says: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_variants(spec, "prepared")
    assert says in ei.value.message


def test_the_relayed_endpoint_keeps_the_host_name_and_reaches_the_relay() -> None:
    e = Endpoint({"host": "db.example", "hostaddr": "10.0.0.5", "port": "5433", "user": "u", "dbname": "d"}, "pw")
    r = relayed(e, 40000)
    assert r.params["host"] == "db.example" and r.params["hostaddr"] == "127.0.0.1" and r.params["port"] == "40000"
    assert r.password == "pw"
    assert upstream_args(e) == ["--upstream-host", "10.0.0.5", "--upstream-port", "5433"]
    sock = Endpoint({"host": "/run/pg", "port": "5432", "user": "u", "dbname": "d"})
    assert upstream_args(sock) == ["--upstream-unix", "/run/pg/.s.PGSQL.5432"]
    assert relayed(sock, 1).params["host"] == "127.0.0.1"
    through = relayed(sock, 1, Path("/run/pgknee-x/relay-y"))
    assert through.params["host"] == "/run/pgknee-x/relay-y" and through.params["port"] == "5432"
    with pytest.raises(TargetError):  # a Unix socket is never relayed from a loopback port
        Relay(sock, 1.0)


def test_probe_summary() -> None:
    p = summarize([float(x) for x in range(1, 101)])
    assert (p.median_ms, p.p99_ms, p.min_ms, p.count) == (50.5, 99.0, 1.0, 100)


# ---- the analysis: the network's share, the checks, pipeline mode's gain ---------------------------------------
def _net(rtt: float, trips: float, added: float | None = None) -> Network:
    return Network(trips, rtt, rtt * 1.2, rtt * 0.9, None, added)


def test_network_bound_is_round_trips_times_rtt_against_the_latency() -> None:
    # 4 round trips x 2 ms = 8 ms of a 10 ms transaction; 400 TPS x 8 ms = 3.2 of the 4 sessions
    s = step(tps=400.0, lat_avg_ms=10.0, clients=4, rtt_ms=2.0)
    c = network_bound(s, _net(2.0, 4.0), client_wait=3.4)
    assert c.id is CheckId.NETWORK_BOUND and c.status is CheckStatus.WARN and c.value == pytest.approx(80.0)
    assert "8.000 ms of each 10.000 ms" in c.detail and "the network explains 3.20" in c.detail
    near = network_bound(step(tps=2000.0, lat_avg_ms=2.0), _net(0.02, 4.0), client_wait=None)
    assert near.status is CheckStatus.OK and near.value == pytest.approx(4.0)
    assert network_bound(step(), Network(), None).status is CheckStatus.NA


def test_rtt_achieved_within_20_percent() -> None:
    assert rtt_achieved(step(rtt_ms=1.0), _net(1.1, 4, added=1.15), None).status is CheckStatus.OK
    bad = rtt_achieved(step(rtt_ms=1.0), _net(1.5, 4, added=1.45), None)
    assert bad.status is CheckStatus.WARN and bad.value == pytest.approx(45.0)
    assert rtt_achieved(step(rtt_ms=0.0), _net(0.02, 4), None).status is CheckStatus.NA


def test_network_checks_only_for_probed_steps() -> None:
    assert network_checks(step(), StepFacts(), (10, 2.0, 0.5), []) == []
    ids = [c.id for c in network_checks(step(rtt_ms=1.0), StepFacts((_net(1.0, 4, added=1.0),)), (10, 2.0, 0.5), [])]
    assert ids == [CheckId.NETWORK_BOUND, CheckId.RTT_ACHIEVED]


def test_pipeline_gain_against_the_twin_at_each_round_trip() -> None:
    variants = [Variant(name=f"{p}{r:g}", pipeline=p == "p", rtt_ms=r) for r in (0.0, 5.0) for p in ("n", "p")]
    plan = Plan(clients=(4,), reps=2, variants=tuple(variants))
    tps = {"n0": 5000.0, "p0": 9000.0, "n5": 180.0, "p5": 720.0}
    steps = [step(step_id=i, seq=i, variant=v.name, clients=4, rep=rep, rtt_ms=v.rtt_ms, pipeline=int(v.pipeline),
                  tps=tps[v.name] * (1 + 0.01 * rep), lat_avg_ms=4000 / tps[v.name])
             for i, (rep, v) in enumerate(((rep, v) for rep in (1, 2) for v in variants), 1)]
    data = make_run_data(steps=steps, scripts={}, failures={}, pgdb={}, os={}, waits={}, waits_bg={}, snaps={},
                         facts={s.step_id: StepFacts((_net(0.02 + s.rtt_ms, 1.0 if s.pipeline else 4.0),))
                                for s in steps})
    data = with_run(data, plan_json=json.dumps(plan.to_dict()))
    view = build(data)
    gains = pipeline_gains(view)
    assert [(g.rtt_ms, g.normal, g.pipeline, round(g.ratio.value, 2)) for g in gains] == [
        (0.0, "n0", "p0", 1.8), (5.0, "n5", "p5", 4.0)]
    (line,) = gain_headline(gains)
    assert "at 4 clients: 0 ms x1.80" in line and "5 ms x4.00" in line
    rows = {r.variant: r for r in network_rows(view)}
    assert rows["n5"].network_ms == pytest.approx(4 * 5.02) and rows["p5"].round_trips == 1.0
    assert rows["n5"].share_pct == pytest.approx(100 * 4 * 5.02 / (4000 / 181.8), rel=0.02)
    # a hop away is a reason in the recommendation's words, not a reason to withhold it
    (why,) = network_reasons([g for g in view.groups if g.variant == "n5"])
    assert why.startswith("at c4 most of each transaction was the network: 4.00 round trips x 5.020 ms")
    assert network_reasons([g for g in view.groups if g.variant == "p0"]) == []


def test_rtt_achieved_warns_when_the_relay_fell_behind_during_the_step() -> None:
    c = rtt_achieved(step(rtt_ms=1.0), _net(1.05, 4, added=1.02), RelayEnd(late_mean_ms=0.2, cpu_pct=97.0))
    assert c.status is CheckStatus.WARN and c.value == pytest.approx(40.0)
    assert "0.400 ms late per round trip" in c.detail and "97% of a core" in c.detail
