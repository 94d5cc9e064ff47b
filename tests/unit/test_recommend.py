"""From a sweep to a recommendation, on synthetic sweeps whose curve is known."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
from builders import make_run_data, os_sample, step

from pgknee.analyze.recommend import concurrency_of, knee, measured_points, recommend
from pgknee.analyze.run import build
from pgknee.analyze.usl import Params
from pgknee.report.jsonout import recommendation_json
from pgknee.types import RunData

CURVE = Params(lam=1000.0, sigma=0.05, kappa=0.002)  # peak 7,397 TPS at 21.8 clients; 95% of it from 14.8


def _sweep(counts: list[int], *, reps: int = 3, noise: float = 0.02, p99: Any = None, client_cpu: float = 20.0,
           pool: int | None = None) -> RunData:
    rng = np.random.default_rng(3)
    steps, os_rows, seq = [], {}, 0
    for c in counts:
        conc = min(c, pool) if pool else c
        for rep in range(1, reps + 1):
            seq += 1
            tps = CURVE.x(conc) * (1 + rng.normal(0, noise))
            steps.append(step(step_id=seq, seq=seq, clients=c, rep=rep, tps=tps, tps_pgbench=tps, tps_db=tps,
                              transactions=int(tps * 10), lat_avg_ms=1000.0 * c / tps,
                              lat_p99_ms=(p99(c) if p99 else 3000.0 * c / tps), threads=2,
                              pooler_kind="managed" if pool else None, pool_size=pool))
            os_rows[seq] = [os_sample(epoch=1001.0, client_cpu_pct=client_cpu)]
    data = make_run_data()
    return dataclasses.replace(data, steps=steps, os=os_rows, scripts={}, failures={}, pgdb={}, waits={}, waits_bg={},
                               snaps={}, env={**data.env, "host.cpus": "2"})


def test_an_identified_peak_gives_the_smallest_count_near_it() -> None:
    r = recommend(build(_sweep([1, 2, 4, 8, 12, 16, 24, 32, 48, 64])))
    assert r.verdict == "recommended" and r.fit is not None and r.fit.identified
    assert r.fit.peak_n.lo < CURVE.peak_n < r.fit.peak_n.hi
    # the model reaches 95% of its peak at 14.8; 12 clients give 89% of it, 16 give 97%: 16 is the first measured
    assert r.modelled_n is not None and 14 < r.modelled_n < 15.5
    assert r.connections == 16
    assert r.interval is not None and r.interval[0] <= r.modelled_n <= r.interval[1] < 16
    assert r.heuristic == 4 and r.cores == 2
    assert "use 16 connections" in r.headline()
    doc = json.loads(json.dumps(recommendation_json(r)))
    assert doc["model"]["identified"] is True and doc["connections"] == 16


def test_a_latency_target_moves_the_answer() -> None:
    # p99 grows with the clients: under 2.0 ms only up to 8 clients, which do not reach 95% of the peak
    r = recommend(build(_sweep([1, 2, 4, 8, 12, 16, 24, 32, 48, 64], p99=lambda c: 0.25 * c)), p99_target_ms=2.0)
    assert r.verdict == "no-count-meets-target" and r.connections is None
    relaxed = recommend(build(_sweep([1, 2, 4, 8, 12, 16, 24, 32, 48, 64], p99=lambda c: 0.25 * c)),
                        p99_target_ms=4.0, fraction=0.9)
    assert relaxed.verdict == "recommended" and relaxed.connections is not None and relaxed.connections <= 16


def test_a_sweep_that_stops_early_proposes_counts() -> None:
    r = recommend(build(_sweep([1, 2, 3, 4])))
    assert r.verdict == "not-identified" and r.connections is None
    assert r.next_counts == (8, 16, 32, 64) and "peak not reached" in r.headline()


def test_a_saturated_client_withholds_the_answer() -> None:
    r = recommend(build(_sweep([1, 2, 4, 8, 16, 32], client_cpu=190.0)))  # 95% of its 2 threads
    assert r.verdict == "withheld" and r.reasons[0].startswith("at c1 pgbench used 190% CPU")
    assert "--threads" in r.reasons[0]


def test_a_pool_caps_the_concurrency_the_model_sees() -> None:
    r = recommend(build(_sweep([4, 8, 16, 32, 64, 128], pool=16)))
    assert r.concurrency == "pool size"
    assert r.fit is not None and r.fit.max_n == 16


def test_the_reserve_pool_counts_in_the_concurrency() -> None:
    view = build(_sweep([4, 8, 16, 32], pool=16, reps=1))
    assert [concurrency_of(g) for g in view.groups] == [4, 8, 16, 16]
    reserve = dataclasses.replace(view.data, steps=[dataclasses.replace(s, pool_reserve=4) for s in view.data.steps])
    assert [concurrency_of(g) for g in build(reserve).groups] == [4, 8, 16, 20]
    # the scalability chart's points: each repetition at its database-side concurrency
    assert [n for n, _ in measured_points(build(reserve), "base")] == [4, 8, 16, 20]


def test_two_counts_are_not_enough() -> None:
    assert recommend(build(_sweep([1, 2]))).verdict == "not-enough-data"


def test_knee_of_a_measured_curve() -> None:
    assert knee([(1, 100.0), (2, 200.0), (4, 390.0), (8, 450.0), (16, 460.0)]) == 4
    assert knee([(1, 100.0), (2, 150.0)]) is None


def test_a_plateau_without_a_decline_is_read_against_its_ceiling() -> None:
    """Strong contention, no coherency cost: throughput levels off at λ/σ = 1,250 and never
    falls. The peak N* does not exist, but 95% of the ceiling is reached inside the sweep."""
    global CURVE
    saved, CURVE = CURVE, Params(lam=1000.0, sigma=0.8, kappa=0.0)
    try:
        r = recommend(build(_sweep([1, 2, 4, 8, 16, 32])))
    finally:
        CURVE = saved
    assert r.verdict == "levels-off" and r.fit is not None and not r.fit.identified
    assert r.reasons[0].startswith("throughput levels off: +2% from 16 to 32 clients, within the 10% noise allowance, "
                                   "and 4..32 clients all stay within it of the best")
    # the plateau is 4..32 (each within 10% of the best); its level the median of their medians, X(8) and
    # X(16) (1,212 and 1,231, with 2% noise 1,216): 95% of it is 1,155, which X(4) = 1,176 reaches; noise
    # would have picked 8 too
    assert r.connections == 4 and r.counts_interval == (4, 8) and r.level_tps is not None
    assert abs(r.level_tps - 1216.0) < 1
    assert r.headline() == ("base: use 4 connections (4..8) — throughput levels off near 1,216 TPS, and 4 is the "
                            "smallest count measured reaching 95% of it")


def test_a_small_pool_caps_the_concurrency_and_says_to_sweep_the_pool_instead() -> None:
    r = recommend(build(_sweep([2, 4, 8, 16, 32], pool=4)))
    assert r.verdict == "not-enough-data" and r.measured == (2, 4)
    assert "the sweep measured only 2, 4; sweep the pool size instead (e.g. pool=2,4,8,16)" in r.headline()
    plain = recommend(build(_sweep([2, 4])))
    assert plain.headline().endswith("(needs at least three client counts)")


def test_a_peak_the_measurements_show_but_the_model_cannot_place_is_said_so() -> None:
    """A real sweep (two agents, 4..32 clients, one repetition each): throughput peaked at 8 and
    was 22% lower at 32, yet four points leave the fit unsure. The answer reads the measured best,
    not "peak not reached", and proposes the counts around the best."""
    data = _sweep([4, 8, 16, 32], reps=1)
    tps = {4: 4356.0, 8: 5334.0, 16: 4768.0, 32: 4152.0}
    data = dataclasses.replace(data, steps=[dataclasses.replace(s, tps=tps[s.clients]) for s in data.steps])
    r = recommend(build(data))
    assert r.fit is not None and not r.fit.identified
    assert r.verdict == "measured-peak" and r.connections == 8 and r.measured_best == 8 and r.interval is None
    assert r.next_counts == (6, 10, 12)
    assert "use 8 connections for now" in r.headline() and "peak not reached" not in r.headline()
    assert r.reasons[0].startswith("the measured throughput peaked at 8 (5,334 TPS) and was 22% lower at 32")
    # a decline within the noise allowance is no peak: the sweep goes on
    flat = {4: 4356.0, 8: 5334.0, 16: 5200.0, 32: 5000.0}
    data = dataclasses.replace(data, steps=[dataclasses.replace(s, tps=flat[s.clients]) for s in data.steps])
    assert recommend(build(data)).verdict != "measured-peak"


def test_a_measured_peak_between_neighbouring_counts_asks_for_repetitions() -> None:
    data = _sweep([1, 2, 3, 4], reps=1)
    tps = {1: 1000.0, 2: 1900.0, 3: 1500.0, 4: 1200.0}
    data = dataclasses.replace(data, steps=[dataclasses.replace(s, tps=tps[s.clients]) for s in data.steps])
    r = recommend(build(data))
    assert r.verdict == "measured-peak" and r.connections == 2 and r.next_counts == ()
    assert r.headline().endswith("repetitions (--reps 3) would narrow it")
