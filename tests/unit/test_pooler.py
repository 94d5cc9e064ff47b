"""The pooler's pure parts: variant specs, the generated config, SHOW POOLS/STATS parsing,
the occupancy check, the analysis and the table (no pgbouncer, no server)."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path

import pytest
from builders import make_run_data, os_sample, renew, step

from pgknee.analyze import checks as ck
from pgknee.analyze.run import build
from pgknee.base.errors import PoolerError, UserError
from pgknee.collect.pooler import PoolerSampler, pool_counts, stats_totals
from pgknee.model.results import PoolerRecord
from pgknee.model.samples import PoolerFacts, PoolerSample
from pgknee.plan import Plan, PoolerSpec, Variant, parse_variant, parse_variants, plan_from_values
from pgknee.pooler.lab import Poolers
from pgknee.pooler.pgbouncer import PoolerSettings
from pgknee.report.jsonout import run_json
from pgknee.report.tables import pooler_table
from pgknee.report.terminal import render


@pytest.mark.parametrize(("spec", "pooler"), [
    ("pooled", PoolerSpec()),
    ("pooled:transaction:pool=20", PoolerSpec(pool_size=20)),
    ("session:pool=5:reserve=2", PoolerSpec(mode="session", pool_size=5, reserve=2)),
    ("pgbouncer:mode=statement", PoolerSpec(mode="statement")),
    ("pooled:placement=client", PoolerSpec(placement="client")),
    ("pooled-external", PoolerSpec(kind="external")),
    ("direct", None),
])
def test_pooled_variant_specs(spec: str, pooler: PoolerSpec | None) -> None:
    assert parse_variant(spec, "extended").pooler == pooler


def test_pool_sizes_expand_into_variants() -> None:
    vs = parse_variants("pooled:transaction:pool=100,20", "simple")
    assert [(v.name, v.pooler.pool_size if v.pooler else None) for v in vs] == [
        ("pooled:transaction:pool=100", 100), ("pooled:transaction:pool=20", 20)]
    named = parse_variants("name=pg:pooled:pool=5, 10", "simple")
    assert [v.name for v in named] == ["pg-pool5", "pg-pool10"]
    plan = plan_from_values({"variants": ["direct", "pooled:pool=4,8"], "protocol": "extended"})
    assert [v.name for v in plan.variants] == ["direct", "pooled:pool=4", "pooled:pool=8"]


@pytest.mark.parametrize(("spec", "words"), [
    ("pooled:pool=0", "pool='0'"), ("pooled:pool=x", "pool='x'"), ("pooled:reserve=-1", "reserve='-1'"),
    ("pooled:mode=lazy", "unknown pool mode 'lazy'"), ("pooled:placement=moon", "unknown placement 'moon'"),
    ("pooled-external:mode=session", "mode set a pgbouncer that pgknee starts"),
])
def test_bad_pooled_variants(spec: str, words: str) -> None:
    with pytest.raises(UserError) as e:
        parse_variant(spec, "extended")
    assert words in e.value.one_line()


def test_plan_pooler_rules_and_redaction() -> None:
    with pytest.raises(UserError, match="no --pooler-dsn"):
        Plan(variants=(Variant("e", pooler=PoolerSpec(kind="external")),))
    with pytest.raises(UserError, match="only used by a pooled-external variant"):
        Plan(pooler_dsn="host=b")
    with pytest.raises(UserError, match="needs --pooler-dsn"):
        Plan(pooler_admin_dsn="host=b dbname=pgbouncer")
    p = Plan(variants=(Variant("e", pooler=PoolerSpec(kind="external")),),
             pooler_dsn="postgresql://app:T0pS3cret@b:6432/db", pooler_admin_dsn="postgresql://adm:Adm1nPw@b/pgbouncer")
    text = json.dumps(p.to_dict())
    assert "T0pS3cret" not in text and "Adm1nPw" not in text and "port=6432" in text


def test_generated_config_sets_what_distorts_a_sweep(tmp_path: Path) -> None:
    s = PoolerSettings(mode="transaction", pool_size=20, reserve=0, max_clients=5000, query_wait_timeout_s=200,
                       prepared_statements=False)
    ini = s.ini(server={"host": "127.0.0.1", "port": "5432", "dbname": "pgknee", "user": "app", "sslmode": "x"},
                listen_port=6500, private_dir=tmp_path, version=(1, 18, 0))
    lines = dict(ln.split(" = ", 1) for ln in ini.splitlines() if " = " in ln)
    assert lines["pgknee"] == ("host=127.0.0.1 port=5432 dbname=pgknee user=app pool_size=20 "
                               "pool_mode=transaction reserve_pool=0 max_db_connections=20")
    for key, value in (("pool_mode", "transaction"), ("default_pool_size", "20"), ("reserve_pool_size", "0"),
                       ("max_db_connections", "20"), ("max_client_conn", "5020"), ("query_wait_timeout", "200"),
                       ("listen_port", "6500"), ("auth_type", "scram-sha-256"), ("listen_backlog", "4096")):
        assert lines[key] == value, key
    assert "max_prepared_statements" not in ini  # 1.18 does not know it
    newer = s.ini(server={"dbname": "d"}, listen_port=1, private_dir=tmp_path, version=(1, 21, 0))
    assert "max_prepared_statements = 0" in newer
    assert "password" not in ini


def test_show_pools_and_stats_by_column_name() -> None:
    pools = [
        {"database": "pgbouncer", "user": "pgbouncer", "cl_active": 1, "cl_waiting": 0, "sv_active": 0,
         "sv_idle": 0, "sv_used": 0, "sv_login": 0, "maxwait": 0, "maxwait_us": 0},
        {"database": "pgknee", "user": "a", "cl_active": 20, "cl_waiting": 80, "sv_active": 20, "sv_idle": 0,
         "sv_used": 1, "sv_login": 0, "maxwait": 1, "maxwait_us": 125884, "pool_mode": "transaction"},
        {"database": "pgknee", "user": "b", "cl_active": 2, "cl_waiting": 1, "sv_active": 2, "sv_idle": 3,
         "sv_used": 0, "sv_login": 1, "maxwait": 0, "maxwait_us": 5000},
    ]
    assert pool_counts(pools, "pgknee") == (22, 81, 22, 3, 1, 1, 1_125_884)
    assert pool_counts(pools, "other") == (0, 0, 0, 0, 0, 0, 0)
    stats = [{"database": "pgknee", "total_xact_count": Decimal(10), "total_xact_time": Decimal(5000),
              "avg_xact_time": Decimal(500), "total_wait_time": 7}]
    assert stats_totals(stats, "pgknee") == {"total_xact_count": 10.0, "total_xact_time": 5000.0,
                                             "total_wait_time": 7.0}


def _pooled(samples: list[tuple[int, int, int]], xacts: float, xact_us: float, wait_us: float) -> PoolerRecord:
    return PoolerRecord([PoolerSample("bench", 1000.0 + i, a, w, sv, 0, 0, 0, 1000 * w)
                         for i, (a, w, sv) in enumerate(samples)],
                      PoolerFacts("managed", deltas=(("total_xact_count", xacts), ("total_xact_time", xact_us),
                                                     ("total_wait_time", wait_us))))


class _Consoles(PoolerSampler):
    """A pooler sampler whose consoles answer SHOW STATS with the totals given, one read after the
    other (None: the console does not answer), never started: its records alone."""

    def __init__(self, reads: list[list[dict[str, float]] | None], facts: PoolerFacts) -> None:
        super().__init__([], "db", 1.0, facts=facts)
        self.reads = reads

    def totals_each(self) -> list[dict[str, float]]:
        got = self.reads.pop(0)
        if got is None:
            raise PoolerError("the console did not answer")
        return got


def test_the_pooler_s_totals_over_the_bench_phase_are_its_collector_s_records() -> None:
    """SHOW STATS read as the bench phase begins and as the post phase begins, by the console's
    collector itself: two processes, 100 and 40 transactions before, 1,100 and 640 after, give a
    change of 1,000 and 600, 1,600 in all, each process's kept; a console that does not answer at
    the end leaves no change, and says so; how the pooler was started is kept either way."""
    ran = PoolerFacts("managed", "1.24.1", (("pool_mode", "transaction"),))
    two = _Consoles([[{"total_xact_count": 100.0}, {"total_xact_count": 40.0}],
                     [{"total_xact_count": 1100.0}, {"total_xact_count": 640.0}]], ran)
    for phase in ("warmup", "bench", "post"):
        two.set_phase(phase)  # type: ignore[arg-type]
    samples, facts = two.end_step()
    assert samples.rows == () and facts.kind == "managed" and facts.settings == ran.settings
    assert facts.delta("total_xact_count") == 1600.0 and facts.missing is None
    assert facts.process_delta(1, "total_xact_count") == 1000.0 and facts.process_delta(2, "total_xact_count") == 600.0
    gone = _Consoles([[{"total_xact_count": 100.0}], None], ran)
    gone.set_phase("bench")
    gone.set_phase("post")
    _, facts = gone.end_step()
    assert facts.deltas == () and facts.missing == "the console did not answer at the end of the step"
    one = _Consoles([[{"total_xact_count": 5.0}], [{"total_xact_count": 7.0}]], ran)
    one.set_phase("bench")
    one.set_phase("post")
    assert one.end_step()[1].per_process == ()  # one process: its change is the whole


def test_pooler_occupancy_takes_the_wait_out() -> None:
    """10 s, 1000 transactions, each 4 ms on a server and 16 ms waiting before it: 0.4
    server connections busy, as sampled; the raw transaction time would say 2.0."""
    s = step(pooler_kind="managed", pool_mode="transaction", pool_size=4)
    p = _pooled([(1, 2, 0), (1, 2, 1), (1, 2, 0), (1, 2, 1), (1, 2, 0)], 1000, 20_000_000, 16_000_000)
    c = ck.pooler_occupancy(s, p)
    assert c.status == "ok" and "= 0.40 busy server connections vs sampled sv_active 0.40 (+0.0%)" in c.detail
    assert ck.pooler_occupancy(s, _pooled([(1, 0, 2)] * 3, 1000, 4_000_000, 0)).status == "warn"
    assert ck.pooler_occupancy(dataclasses.replace(s, pool_mode="session"), p).status == "n/a"
    assert ck.pooler_occupancy(s, None).status == "n/a"


def test_pooler_analysis_table_and_json() -> None:
    data = make_run_data()
    steps = [dataclasses.replace(x, pooler_kind="managed", pool_mode="transaction", pool_size=4, conn_time_ms=None)
             for x in data.steps]
    pooler = {x.step_id: _pooled([(4, 6, 4), (4, 10, 4), (3, 2, 3)], 1000, 20_000_000, 12_000_000)
              for x in steps}
    os_rows = {x.step_id: [os_sample(pooler_cpu_pct=90.0), os_sample(epoch=1002.0, pooler_cpu_pct=95.0)]
               for x in steps}
    view = build(renew(data, steps=steps, pooler=pooler, os=os_rows))
    p = view.groups[0].pooler
    assert p is not None and p.mode == "transaction" and p.pool_size == 4 and p.samples == 6
    assert p.cl_waiting is not None and p.cl_waiting.value == 6.0 and p.cl_waiting_peak is not None
    assert p.cl_waiting_peak.value == 10 and p.sv_active_peak is not None and p.sv_active_peak.value == 4
    assert p.wait_ms_per_txn is not None and p.wait_ms_per_txn.value == 12.0
    assert p.xact_ms is not None and p.xact_ms.value == 20.0 and p.server_ms is not None and p.server_ms.value == 8.0
    assert p.cpu is not None and p.cpu.value == 92.5
    # no samples of its own (a store before format 17): the busiest process's CPU the OS sampler kept
    assert any("pooler-bound: pgbouncer was at 92% of a core: the step shows the pooler's ceiling, not the "
               "server's" in w for w in view.warnings)
    text = render([t for t in [pooler_table(view, "base")] if t is not None], width=150)
    assert "Pooler — base: managed pgbouncer, transaction mode, pool 4" in text
    assert "Clients waiting, peak" in text and "  of it on a server connection (ms)" in text
    doc = run_json(view)
    assert doc["summary"][0]["pooler"]["wait_ms_per_txn"]["median"] == 12.0
    # while pgbench opens its connections (1.5 s here) the pool fills: those samples are left out
    slow = [dataclasses.replace(x, conn_time_ms=1500.0) for x in steps]
    p2 = build(renew(data, steps=slow, pooler=pooler, os=os_rows)).groups[0].pooler
    assert p2 is not None and p2.samples == 2 and p2.cl_waiting is not None and p2.cl_waiting.value == 2.0
    assert doc["steps"][0]["pooler_kind"] == "managed"


def test_refusals_before_anything_starts(tmp_path: Path) -> None:
    scripts = {"s": [("t", "BEGIN;\nSELECT 1;\nCOMMIT;\n")]}

    def check(v: Variant, clients: tuple[int, ...] = (10,), embedded: bool = True) -> None:
        Poolers(Plan(variants=(v,), clients=clients)).check_before_start(
            {v.name: scripts["s"]}, embedded=embedded)

    with pytest.raises(UserError, match="statement mode cannot run t"):
        check(Variant("s", "extended", pooler=PoolerSpec(mode="statement")))
    with pytest.raises(UserError, match="session mode each client keeps its server connection"):
        check(Variant("s", "extended", pooler=PoolerSpec(mode="session", pool_size=5)))
    check(Variant("s", "extended", connect_per_txn=True, pooler=PoolerSpec(mode="session", pool_size=5)))
    with pytest.raises(UserError, match="a remote server's CPUs are not pgknee's to share"):
        check(Variant("s", "extended", pooler=PoolerSpec(placement="server")), embedded=False)


def test_no_pgbouncer_is_one_line_naming_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """pgbouncer stays a system package (pip and pipx cannot bring it): without it, a pooled
    variant is refused in one line that says which package to install, not a checkout's make."""
    import shutil

    from pgknee.base.errors import PoolerError
    from pgknee.pooler import pgbouncer

    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setattr(pgbouncer.os, "access", lambda _path, _mode: False)
    with pytest.raises(PoolerError) as e:
        pgbouncer.find_pgbouncer()
    assert e.value.message == "pgbouncer is not installed, and a pooled variant needs it"
    assert (e.value.hint or "").startswith("install the pgbouncer package (apt-get install pgbouncer")


def test_pooler_facts_are_typed_and_stored_as_their_name_value_rows() -> None:
    facts = PoolerFacts("managed", "1.18.0", (("pool_mode", "transaction"), ("pool_size", "8")),
                        (("pool_mode", "session"),), (("total_xact_count", 1234.0), ("total_wait_time", 0.1 + 0.2)),
                        None, "server closed the connection")
    rows = dict(facts.items())
    assert rows == {"kind": "managed", "version": "1.18.0", "setting.pool_mode": "transaction",
                    "setting.pool_size": "8", "external.pool_mode": "session", "delta.total_xact_count": "1234.0",
                    "delta.total_wait_time": "0.30000000000000004", "sampler_errors": "server closed the connection"}
    back = PoolerFacts.of_items(rows)
    assert back == facts  # a delta reads back exactly
    assert back.delta("total_wait_time") == 0.1 + 0.2 and back.delta("avg_query_time") is None
    assert back.reported("pool_mode") == "session" and back.reported("pool_size") is None
