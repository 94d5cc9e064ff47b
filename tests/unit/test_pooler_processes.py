"""Several pgbouncer processes (processes=N), without a server: the variant key and its list, what
each process is told, the per-process facts as stored, the pooler-bound check, and the answer to
"how many processes" from a constructed sweep."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from builders import make_run_data, os_sample, renew, step

from pgknee.analyze import checks as ck
from pgknee.analyze.recommend import recommend, recommend_all
from pgknee.analyze.run import build
from pgknee.base.errors import UserError
from pgknee.model.results import PoolerRecord, RunData
from pgknee.model.rules import database_concurrency
from pgknee.model.samples import PoolerFacts, PoolerProcessSample
from pgknee.plan import PoolerSpec, parse_variant, parse_variants
from pgknee.pooler.pgbouncer import PoolerSettings


def test_the_variant_key_its_list_and_its_bounds() -> None:
    v = parse_variant("pooled:transaction:pool=8:processes=2", "extended")
    assert v.pooler is not None and v.pooler.processes == 2 and v.pooler.server_connections == 16
    assert "2 processes on one port (each its own pool: the server sees up to 16 connections)" in v.describe()
    names = [x.name for x in parse_variants("pooled:transaction:pool=8:processes=1,2,4", "extended")]
    assert names == [f"pooled:transaction:pool=8:processes={n}" for n in (1, 2, 4)]
    for bad in ("processes=0", "processes=65", "processes=2.5", "processes="):
        with pytest.raises(UserError, match="processes="):
            parse_variant(f"pooled:pool=8:{bad}", "extended")
    with pytest.raises(UserError, match="processes set a pgbouncer that pgknee starts"):
        parse_variant("pooled-external:processes=2", "extended")
    with pytest.raises(UserError, match="from 1 to 64"):
        PoolerSpec(processes=0)
    # each process has its own pool: the database sees up to N x (pool + reserve)
    assert database_concurrency(64, "managed", 8, 0, 2) == 16 and database_concurrency(10, "managed", 8, 0, 2) == 10


def _ini(version: tuple[int, int, int], processes: int, process: int) -> str:
    s = PoolerSettings("transaction", 8, 0, 100, 300, False, processes=processes)
    return s.ini(server={"host": "db", "dbname": "x", "user": "u"}, listen_port=6000, private_dir=Path("/p"),
                 version=version, process=process)


def test_each_process_is_told_the_shared_port_its_own_console_and_its_peers() -> None:
    one = _ini((1, 18, 0), 1, 1)
    assert "listen_addr = 127.0.0.1\n" in one and "so_reuseport" not in one and "[peers]" not in one
    second = _ini((1, 18, 0), 2, 2)
    assert "listen_addr = 127.0.0.1,127.0.1.2\n" in second and "so_reuseport = 1\n" in second
    assert "default_pool_size = 8\n" in second and "max_db_connections = 8\n" in second  # per process
    assert "peer_id" not in second and "[peers]" not in second  # 1.18 has no peering
    peered = _ini((1, 19, 0), 3, 2)
    assert "peer_id = 2\n" in peered
    assert peered.endswith("[peers]\n1 = host=127.0.1.1 port=6000\n2 = host=127.0.1.2 port=6000\n"
                           "3 = host=127.0.1.3 port=6000\n")


def test_per_process_deltas_are_stored_and_read_back() -> None:
    f = PoolerFacts("managed", deltas=(("total_xact_count", 30.0),),
                    per_process=((1, "total_xact_count", 18.0), (2, "total_xact_count", 12.0)))
    items = dict(f.items())
    assert items["process.1.total_xact_count"] == "18.0" and items["process.2.total_xact_count"] == "12.0"
    back = PoolerFacts.of_items(items)
    assert back == f and back.process_delta(2, "total_xact_count") == 12.0


def _procs(cpu: dict[int, tuple[float, float]]) -> list[PoolerProcessSample]:
    return [PoolerProcessSample("bench", 1001.0 + t, n, 100 + n, u, s, 30.0, 10, 0, 8, 0) for t in range(4)
            for n, (u, s) in cpu.items()]


def test_pooler_bound_reads_the_busiest_process() -> None:
    s = step(pooler_kind="managed", pool_mode="transaction", pool_size=8, pool_processes=2)
    rec = PoolerRecord([], PoolerFacts("managed"), _procs({1: (30.0, 20.0), 2: (55.0, 37.0)}))
    c = ck.pooler_bound(s, rec, [])
    assert c.status == "warn" and c.value == pytest.approx(92.0)
    assert c.detail == ("pgbouncer was at 92% of a core (process 2 of 2, user 55%, system 37%; it waited for a CPU "
                        "30% of the time): the step shows the "
                        "pooler's ceiling, not the server's")
    calm = PoolerRecord([], PoolerFacts("managed"), _procs({1: (30.0, 20.0), 2: (40.0, 20.0)}))
    assert ck.pooler_bound(s, calm, []).status == "ok"
    # a store from before each process's samples: the busiest process's CPU the OS sampler kept
    old = ck.pooler_bound(dataclasses.replace(s, pool_processes=1), PoolerRecord([], PoolerFacts("managed")),
                          [os_sample(pooler_cpu_pct=80.0), os_sample(epoch=1002.0, pooler_cpu_pct=90.0)])
    assert old.status == "warn" and old.detail.startswith("pgbouncer was at 85% of a core:")
    assert ck.pooler_bound(dataclasses.replace(s, pooler_kind="external"), None, []).status == "n/a"


def _sweep(tps: dict[int, dict[int, float]], cpu: dict[int, dict[int, float]],
           pools: dict[int, int] | None = None) -> RunData:
    """processes -> clients -> TPS, and the busiest process's CPU, as a stored run (a pool of 8
    in each process unless `pools` says otherwise)."""
    steps, pooler = [], {}
    for n, by_clients in tps.items():
        pool = (pools or {}).get(n, 8)
        for clients, x in by_clients.items():
            sid = len(steps) + 1
            steps.append(step(step_id=sid, seq=sid, variant=f"pooled:transaction:pool={pool}:processes={n}",
                              clients=clients, tps=x, tps_pgbench=x, tps_db=x, transactions=int(x * 10),
                              lat_avg_ms=1000.0 * clients / x, lat_p99_ms=3000.0 * clients / x,
                              pooler_kind="managed", pool_mode="transaction", pool_size=pool, pool_processes=n))
            busy = cpu[n][clients]
            pooler[sid] = PoolerRecord([], PoolerFacts("managed"), _procs({i: (busy * 0.6, busy * 0.4)
                                                                           for i in range(1, n + 1)}))
    return renew(make_run_data(), steps=steps, pooler=pooler, os={}, scripts={}, failures={}, pgdb={},
                               waits={}, waits_bg={}, snaps={})


TPS = {1: {64: 10_000.0, 128: 11_800.0, 256: 12_000.0}, 2: {64: 10_100.0, 128: 14_000.0, 256: 15_800.0},
       4: {64: 10_000.0, 128: 14_100.0, 256: 16_000.0}}
CPU = {1: {64: 70.0, 128: 84.0, 256: 97.0}, 2: {64: 40.0, 128: 60.0, 256: 70.0}, 4: {64: 22.0, 128: 33.0, 256: 38.0}}


def test_how_many_processes_with_the_same_server_connections() -> None:
    """pool=16 in one process, 8 in each of two, 4 in each of four: the same 16 server connections.
    One process is pooler-bound from 256 clients at 12,000 TPS; two reach 15,800 with neither near
    a core; four add nothing beyond the noise: two processes."""
    view = build(_sweep(TPS, CPU, {1: 16, 2: 8, 4: 4}))
    answer = next(r for r in recommend_all(view) if r.concurrency == "pooler processes")
    assert answer.variant == "pooled:transaction:pool×processes=16:processes=1,2,4 at 256 clients"
    assert answer.connections == 2 and answer.measured == (1, 2, 4) and answer.measured_best == 4
    assert answer.headline().startswith(
        "pooled:transaction:pool×processes=16:processes=1,2,4 at 256 clients: run 2 pgbouncer processes "
        "(95% interval 2..4) — the fewest reaching 95% of the best (16,000 TPS with 4)")
    assert ("by processes: 1 process: 12,000 TPS, the busiest at 97% of a core (pooler-bound); 2 processes: 15,800 "
            "TPS, the busiest at 70% of a core") in answer.reasons[0]
    assert len(answer.reasons) == 1  # nothing to say about server connections: they were the same
    # one process's own answer leaves its pooler-bound count out and says why, first
    one = recommend(view, "pooled:transaction:pool=16:processes=1")
    assert one.verdict == "withheld" and one.measured == (16,)
    assert one.reasons[0].startswith("pgbouncer was at 97% of a core (user 58%, system 39%; it waited for a CPU "
                                     "30% of the time) from c256: add a "
                                     "process (processes=N) or measure without it")


def test_with_the_same_pool_in_each_process_only_the_cores_answer() -> None:
    """pool=8 in each: 2 processes hold 16 server connections and 4 hold 32, so their throughput
    cannot say whether the processes helped; the fewest not pooler-bound is the answer."""
    view = build(_sweep(TPS, CPU))
    answer = next(r for r in recommend_all(view) if r.concurrency == "pooler processes")
    assert answer.variant == "pooled:transaction:pool=8:processes=1,2,4 at 256 clients" and answer.connections == 2
    assert answer.headline() == ("pooled:transaction:pool=8:processes=1,2,4 at 256 clients: run 2 pgbouncer "
                                 "processes — the fewest with none near a full core (their server connections "
                                 "differed, so their throughput could not tell)")
    assert answer.reasons[1].startswith("each process has its own pool, so the server connections differ (1 × pool "
                                        "8 = 8; 2 × pool 8 = 16; 4 × pool 8 = 32)")
    # even the most processes pooler-bound: no count, more processes next
    hot = build(_sweep({1: {256: 9_000.0}, 2: {256: 12_000.0}}, {1: {256: 99.0}, 2: {256: 96.0}}))
    r = next(r for r in recommend_all(hot) if r.concurrency == "pooler processes")
    assert r.connections is None and r.next_counts == (4,) and "try 4 processes" in r.headline()


def test_a_curve_still_rising_when_the_pooler_saturates() -> None:
    """Throughput still grows from 2 to 8 clients and pgbouncer is at 97% of its core at 16: the
    answer is not 'nothing was saturated, run more clients', but the pooler's ceiling, first."""
    view = build(_sweep({1: {2: 2_000.0, 4: 3_900.0, 8: 7_500.0, 16: 9_000.0}},
                        {1: {2: 20.0, 4: 40.0, 8: 70.0, 16: 97.0}}, {1: 128}))
    r = recommend(view, "pooled:transaction:pool=128:processes=1")
    assert r.verdict == "not-identified" and r.connections is None
    assert all(c < 16 for c in r.next_counts)
    assert r.headline().startswith("pooled:transaction:pool=128:processes=1: peak not reached below the pooler's "
                                   "ceiling — throughput still grew beyond the noise up to it: pgbouncer was at 97% "
                                   "of a core (user 58%, system 39%; it waited for a CPU 30% of the time) from c16: "
                                   "add a process (processes=N)")
