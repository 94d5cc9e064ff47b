"""The network's arithmetic: round trips counted from pgbench scripts, the rtt variant keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgknee.driver.pgbench import pipeline_form
from pgknee.driver.roundtrips import per_transaction, round_trips
from pgknee.errors import UserError
from pgknee.netsim.control import relayed, summarize, upstream_args
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


def test_probe_summary() -> None:
    p = summarize([float(x) for x in range(1, 101)])
    assert (p.median_ms, p.p99_ms, p.min_ms, p.count) == (50.5, 99.0, 1.0, 100)
