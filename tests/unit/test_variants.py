"""Variants: parsing, validation, and the pipeline form of scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgknee.base.errors import UserError
from pgknee.driver.pgbench import PgbenchRun, pipeline_form
from pgknee.plan import Plan, Variant, parse_variant
from pgknee.workloads.base import Script
from pgknee.workloads.ewallet import _sql


@pytest.mark.parametrize(("spec", "expected"), [
    ("normal", Variant("normal", "prepared")),
    ("direct", Variant("direct", "prepared")),
    ("pipeline", Variant("pipeline", "prepared", pipeline=True)),
    ("connect", Variant("connect", "prepared", connect_per_txn=True)),
    ("simple", Variant("simple", "simple")),
    ("pipeline:extended", Variant("pipeline:extended", "extended", pipeline=True)),
    ("name=np:pipeline=on:protocol=extended", Variant("np", "extended", pipeline=True)),
    ("name=c:connect=yes:pipeline=off", Variant("c", "prepared", connect_per_txn=True)),
])
def test_parse_variant(spec: str, expected: Variant) -> None:
    assert parse_variant(spec, "prepared") == expected


def test_variant_takes_the_base_protocol_unless_it_sets_one() -> None:
    assert parse_variant("connect", "extended").protocol == "extended"
    assert parse_variant("connect:simple", "extended").protocol == "simple"


@pytest.mark.parametrize(("spec", "words"), [
    ("pipeline:simple", "pipeline mode needs the extended or prepared protocol"),
    ("name=x:simple:pipeline", "pipeline mode needs"),
    ("turbo", "unknown variant 'turbo'"),
    ("colour=red", "unknown key 'colour'"),
    ("protocol=quic", "unknown protocol 'quic'"),
    ("pipeline=maybe", "must be on or off"),
    ("name=a b", "variant name"),
    ("", "empty"),
    ("pipeline::connect", "empty part"),
])
def test_bad_variants_are_user_errors(spec: str, words: str) -> None:
    with pytest.raises(UserError) as e:
        parse_variant(spec, "prepared")
    assert words in e.value.one_line()


def test_plan_refuses_duplicate_variant_names_and_pipeline_with_simple() -> None:
    with pytest.raises(UserError, match="unique"):
        Plan(variants=(Variant("a"), Variant("a", pipeline=True)))
    with pytest.raises(UserError, match="pipeline mode"):
        Plan(variants=(Variant("p", "simple", pipeline=True),))


def test_pipeline_form_of_the_ewallet_transfer() -> None:
    out = pipeline_form(_sql("transfer"), "transfer.sql").splitlines()
    start, end = out.index("\\startpipeline"), out.index("\\endpipeline")
    assert out[start + 1] == "BEGIN;" and out[end - 1] == "END;"
    assert all(not ln.startswith("\\set") for ln in out[start:end])  # the \set lines stay before it
    assert sum(ln.startswith("\\set") for ln in out[:start]) == 6
    assert out[end + 1:] == []


@pytest.mark.parametrize(("text", "words"), [
    ("\\set a 1\nSELECT 1 AS x \\gset\nSELECT :x;\n", "x.sql:2: \\gset reads a result"),
    ("SELECT 1 \\aset\n", "x.sql:1: \\aset"),
    ("SELECT 1;\n\\sleep 1 ms\nSELECT 2;\n", "x.sql:2: meta-command \\sleep between SQL commands"),
    ("\\startpipeline\nSELECT 1;\n\\endpipeline\n", "already uses pipelines"),
    ("-- nothing\n\\set a 1\n", "no SQL command"),
])
def test_pipeline_form_refuses_what_pipelines_cannot_do(text: str, words: str) -> None:
    with pytest.raises(UserError) as e:
        pipeline_form(text, "x.sql")
    assert words in e.value.one_line()


def test_a_comment_mentioning_gset_is_not_a_gset() -> None:
    assert "\\startpipeline" in pipeline_form("-- no \\gset here\nSELECT 1;\n", "x.sql")


def test_connect_per_transaction_adds_connect_flag() -> None:
    run = PgbenchRun(pgbench="pgbench", clients=4, threads=2, duration_s=5, protocol="prepared",
                     scripts=(Script("t", Path("/x/t.sql"), 1),), defines=(), log_prefix=None, max_tries=1,
                     version_num=150000, connect_per_txn=True)
    assert "--connect" in run.argv()
    assert "--connect" not in PgbenchRun(**{**run.__dict__, "connect_per_txn": False}).argv()


@pytest.mark.parametrize(("text", "expected"), [
    ("read_heavy.sql@100", ("read_heavy.sql", 100)), ("a.sql", ("a.sql", 1)), ("dir@x/a.sql@3", ("dir@x/a.sql", 3)),
])
def test_parse_script(text: str, expected: tuple[str, int]) -> None:
    from pgknee.plan import parse_script

    assert parse_script(text) == expected


@pytest.mark.parametrize(("text", "words"), [("a.sql@0", "positive whole number"), ("a.sql@-1", "positive"),
                                             ("a.sql@x", "positive"), ("@5", "no file name")])
def test_parse_script_errors(text: str, words: str) -> None:
    from pgknee.plan import parse_script

    with pytest.raises(UserError, match=words):
        parse_script(text)


def test_workload_rules() -> None:
    from pgknee.plan import WorkloadSpec

    with pytest.raises(UserError, match="needs at least one --script"):
        Plan(workload=WorkloadSpec(name="custom"))
    with pytest.raises(UserError, match="belongs to --workload custom"):
        Plan(workload=WorkloadSpec(scripts=(("a.sql", 1),)))
    with pytest.raises(UserError, match="whole number of at least 1"):
        Plan(workload=WorkloadSpec(name="tpcb", scale=0.5))
    with pytest.raises(UserError, match="unknown workload"):
        Plan(workload=WorkloadSpec(name="tpcc"))
    assert Plan(workload=WorkloadSpec(name="select-only", scale=10)).workload.scale == 10


def test_open_loop_variant() -> None:
    v = parse_variant("rate=250.5", "prepared")
    assert v.rate == 250.5 and v.name == "rate=250.5" and "open loop at 250.5 TPS" in v.describe()
    for bad in ("rate=0", "rate=-3", "rate=fast", "rate=inf"):
        with pytest.raises(UserError, match="positive number of TPS"):
            parse_variant(bad, "prepared")
    run = PgbenchRun(pgbench="pgbench", clients=4, threads=2, duration_s=5, protocol="prepared",
                     scripts=(Script("t", Path("/x/t.sql"), 1),), defines=(), log_prefix=None, max_tries=3,
                     version_num=150000, rate=250.5)
    assert "--rate=250.5" in run.argv()


def test_think_time_variant() -> None:
    v = parse_variant("name=app:think=50ms", "prepared")
    assert v.think_ms == 50.0 and v.name == "app" and "think time 50 ms after each transaction" in v.describe()
    assert parse_variant("think=1.5s", "prepared").think_ms == 1500.0
    assert parse_variant("think=250us", "prepared").think_ms == 0.25
    for bad, words in (("think=0", "greater than zero"), ("think=soon", "not a duration"),
                       ("think=2m", "between 1us and 60s"), ("think=0.1us", "between 1us and 60s")):
        with pytest.raises(UserError, match=words):
            parse_variant(bad, "prepared")
    with pytest.raises(UserError, match="think time and a target rate both pace the clients"):
        Plan(variants=(parse_variant("think=10ms:rate=100", "prepared"),))


def test_transaction_log_with_schedule_lag(tmp_path: Path) -> None:
    """With --rate the log has schedule_lag after time_us, then retries (with --max-tries != 1)."""
    from pgknee.driver.measure import measure, read_transaction_logs

    log = tmp_path / "log.1"
    log.write_text("0 1 1500 0 1700000000 100 200 0\n"
                   "0 2 2500 0 1700000000 200000 400 1\n"
                   "1 1 failed 0 1700000000 300000 600 2\n"
                   "1 2 skipped 0 1700000000 400000 0 0\n")
    t = read_transaction_logs([log], has_lag=True, has_retries=True)
    s0 = t.scripts[0]
    assert (s0.latency.count, s0.latency.min, s0.latency.max, s0.failed) == (2, 1500, 2500, 1) and t.skipped == 1
    assert (s0.retried, s0.retries) == (2, 3)  # retries 0, 1, 2
    assert (t.lag.count, t.lag.min, t.lag.max, t.lag.total) == (3, 200, 600, 1200)  # 200, 400, 600
    m = measure(t, [Script("t", log, 1)], 1.0)
    assert m.lag is not None and abs(m.lag.mean_ms - 0.4) < 1e-9 and m.lag.max_ms == 0.6 and m.skipped == 1
    # lag without retries (--max-tries 1, or pgbench < 15): the 7th column is the lag, not retries
    t2 = read_transaction_logs([log], has_lag=True, has_retries=False)
    assert (t2.scripts[0].retried, t2.scripts[0].retries) == (0, 0)
    assert (t2.lag.count, t2.lag.min, t2.lag.max, t2.lag.total) == (3, 200, 600, 1200)
