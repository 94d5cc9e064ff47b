"""The adaptive sweep's choices (pgknee run --until-answer) on synthetic sweeps whose curve is
known: the USL with noise from a fixed seed, measured only where the sweep asks."""

from __future__ import annotations

import numpy as np
import pytest
from builders import make_run_data, os_sample, renew, step

from pgknee.analyze import adaptive as ad
from pgknee.analyze.recommend import Recommendation, recommend
from pgknee.analyze.run import build
from pgknee.analyze.usl import Params
from pgknee.model.results import RunData

# each round fits the model with its bootstrap (seconds on a shared 2-CPU machine): the sweeps
# below take several rounds
SWEEP_TIMEOUT = pytest.mark.timeout(300)

CURVE = Params(lam=1000.0, sigma=0.05, kappa=0.002)  # peak 7,397 TPS at 21.8 clients; 95% of it from 14.8
TRUE_ANSWER = 15  # the smallest count whose modelled TPS reaches 95% of the peak
# a 2-CPU machine: throughput flat from about 3 clients, slightly down after
SMALL = Params(lam=1000.0, sigma=0.3, kappa=0.02)


class Lab:
    """A sweep measured on demand: each batch is `reps` repetitions of a count."""

    def __init__(self, curve: Params, *, noise: float = 0.02, seed: int = 5, reps: int = 1) -> None:
        self.curve, self.noise, self.reps = curve, noise, reps
        self.rng = np.random.default_rng(seed)
        self.steps: list = []
        self.batches = 0

    def measure(self, counts: tuple[int, ...]) -> None:
        for c in counts:
            self.batches += 1
            for rep in range(1, self.reps + 1):
                seq = len(self.steps) + 1
                tps = self.curve.x(c) * (1 + self.rng.normal(0, self.noise))
                self.steps.append(step(step_id=seq, seq=seq, clients=c, rep=rep, tps=tps, tps_pgbench=tps, tps_db=tps,
                                       transactions=int(tps * 10), lat_avg_ms=1000.0 * c / tps,
                                       lat_p99_ms=3000.0 * c / tps, threads=2))

    def data(self) -> RunData:
        base = make_run_data()
        return renew(base, steps=list(self.steps),
                                   os={s.step_id: [os_sample(client_cpu_pct=20.0)] for s in self.steps},
                                   scripts={}, failures={}, pgdb={}, waits={}, waits_bg={}, snaps={},
                                   env={**base.env, "host.cpus": "2"})

    def run(self, settings: ad.Settings, *, budget: int = 100) -> tuple[ad.Next, list[tuple[int, ...]]]:
        """Ask, measure, ask again until the sweep stops; `budget` batches in all."""
        asked: list[tuple[int, ...]] = []
        while True:
            nxt = ad.next_step(build(self.data()), "base", settings, affordable=budget - self.batches)
            if nxt.stopped:
                return nxt, asked
            asked.append(nxt.counts)
            self.measure(nxt.counts)


def test_the_grid_is_every_count_below_16_then_an_eighth_of_the_power_of_two() -> None:
    assert ad.grid(1, 8) == (1, 2, 3, 4, 5, 6, 7, 8)
    assert ad.grid(1, 40) == (*range(1, 16), 16, 18, 20, 22, 24, 26, 28, 30, 32, 36, 40)
    assert ad.grid(10, 17) == (10, 11, 12, 13, 14, 15, 16, 17)  # the top is always on it
    assert [ad.resolution(n) for n in (1, 15, 16, 31, 32, 64, 100)] == [1, 1, 2, 2, 4, 8, 8]
    assert ad.coarse(1, 8) == (1, 2, 4, 8)
    assert ad.coarse(1, 20) == (1, 2, 4, 8, 16, 20)
    assert ad.coarse(3, 3) == (3,)
    assert ad.neighbours(5, ad.grid(1, 8)) == (4, 6)
    assert ad.neighbours(1, ad.grid(1, 8)) == (1, 2) and ad.neighbours(8, ad.grid(1, 8)) == (7, 8)
    assert ad.neighbours(17, ad.grid(1, 40)) == (16, 18)


def _rec(connections: int | None, span: tuple[int, int] | None, verdict: str = "peaks",
         settled: bool = True) -> Recommendation:
    return Recommendation(variant="base", verdict=verdict, connections=connections, counts_interval=span,
                          fit=None, knee=None, heuristic=4, cores=2, spindles=0, fraction=0.95, p99_target_ms=None,
                          settled=settled)


def test_within_one_step_means_the_95_percent_interval_holds_two_adjacent_grid_counts() -> None:
    g = ad.grid(1, 40)
    assert ad.answer_counts((4, 5), g) == (4, 5) and ad.answer_counts((16, 20), g) == (16, 18, 20)
    assert ad.within_one_step(_rec(5, (4, 5)), g) and ad.within_one_step(_rec(5, (5, 5)), g)
    assert not ad.within_one_step(_rec(5, (4, 6)), g)  # 4, 5, 6: three counts
    assert ad.within_one_step(_rec(18, (16, 18)), g)  # one step is 2 there
    assert not ad.within_one_step(_rec(18, (16, 20)), g)  # 18 unmeasured or not, it is inside
    assert ad.within_one_step(_rec(18, (18, 18), "levels-off"), g)
    assert not ad.within_one_step(_rec(18, (18, 18), "levels-off", settled=False), g)  # for now
    assert not ad.within_one_step(_rec(18, (18, 18), "saturated"), g)
    assert not ad.within_one_step(_rec(None, None, "not-identified"), g)


def test_it_starts_with_the_coarse_sweep_and_respects_the_budget_there() -> None:
    lab = Lab(CURVE)
    nxt = ad.next_step(build(lab.data()), "base", ad.Settings(1, 32), affordable=10)
    assert nxt.counts == (1, 2, 4, 8, 16, 32) and nxt.stopped is None and nxt.why.startswith("coarse sweep")
    few = ad.next_step(build(lab.data()), "base", ad.Settings(1, 32), affordable=2)
    assert few.counts == (1, 2)
    none = ad.next_step(build(lab.data()), "base", ad.Settings(1, 32), affordable=0)
    assert none.counts == () and none.stopped == ad.BUDGET_SPENT and none.why.startswith("budget spent")


@SWEEP_TIMEOUT
def test_it_converges_on_the_true_answer_within_one_step_in_a_bounded_number_of_steps() -> None:
    """The true answer is 15 (X(14) is 94.0% of the peak, X(15) 95.6%): at 3% noise no sweep of
    three repetitions tells 14 from 15, so the sweep either calls the answer known or stops when
    the region is measured three times; either way the count is within one step of 15, found
    where the answer is, in far fewer batches than the exhaustive sweep's 72 (24 counts x 3)."""
    lab = Lab(CURVE, noise=0.03, seed=1)
    nxt, asked = lab.run(ad.Settings(1, 32))
    g = ad.grid(1, 32)
    assert all(c in g for batch in asked for c in batch)  # on the grid, inside the range
    assert nxt.stopped in (ad.ANSWER_KNOWN, ad.NO_BETTER_STEP), nxt.why
    rec = nxt.recommendation
    assert rec is not None and rec.connections is not None
    below, above = ad.neighbours(TRUE_ANSWER, g)
    assert below <= rec.connections <= above, (rec.connections, nxt.why)
    assert asked[0] == (1, 2, 4, 8, 16, 32)
    # it looked where the answer is, and between the best measured and its neighbour, where the peak is
    assert all(11 <= c <= 31 for batch in asked[1:] for c in batch), asked
    assert lab.batches <= 24
    reps = ad.repetitions(build(lab.data()), "base")
    assert reps[rec.connections] >= 2 and all(c in reps for c in ad.neighbours(rec.connections, g))  # the evidence


@SWEEP_TIMEOUT
def test_a_small_machine_finds_its_answer_in_one_to_eight_clients() -> None:
    lab = Lab(SMALL, noise=0.03, seed=3)
    nxt, asked = lab.run(ad.Settings(1, 8))
    truth = next(c for c in range(1, 9) if SMALL.x(c) >= 0.95 * SMALL.peak_x)
    rec = nxt.recommendation
    assert nxt.stopped == ad.ANSWER_KNOWN, nxt.why
    assert rec is not None and rec.connections is not None and abs(rec.connections - truth) <= 1, nxt.why
    assert asked[0] == (1, 2, 4, 8) and all(2 <= c <= 7 for batch in asked[1:] for c in batch), asked
    assert lab.batches <= 16  # the coarse four, then one count or repetition at a time (exhaustive: 24)


@SWEEP_TIMEOUT
def test_four_points_sure_of_themselves_are_not_an_answer_yet() -> None:
    lab = Lab(SMALL, noise=0.03, seed=11)  # after the coarse sweep the model is sure: 3.3..3.4, i.e. 4
    lab.measure((1, 2, 4, 8))
    settings = ad.Settings(1, 8)
    rec = recommend(build(lab.data()), "base")
    assert ad.within_one_step(rec, ad.grid(1, 8))
    nxt = ad.next_step(build(lab.data()), "base", settings, affordable=5)
    assert nxt.stopped is None and nxt.counts in ((3,), (5,)), nxt.why  # the answer's neighbours first
    assert nxt.why.endswith("clients: next to the answer (4), not measured yet")
    lab.measure((3, 5))
    again = ad.next_step(build(lab.data()), "base", settings, affordable=5)
    if again.stopped is None:  # not called known yet: a repetition inside the 95% interval (the recommended
        # count's second, or one the interval's width asks for), or an unmeasured neighbour of the answer
        rec2 = again.recommendation
        assert rec2 is not None and rec2.connections is not None and rec2.counts_interval is not None
        lo, hi = rec2.counts_interval
        assert len(again.counts) == 1, again.why
        assert (("one more repetition" in again.why and lo <= again.counts[0] <= hi)
                or (again.counts[0] not in (1, 2, 3, 4, 5, 8) and "next to the answer" in again.why
                    and abs(again.counts[0] - rec2.connections) <= 2)), again.why


@SWEEP_TIMEOUT
def test_the_budget_ends_the_sweep_and_is_never_exceeded() -> None:
    lab = Lab(CURVE, noise=0.05, seed=6)
    nxt, asked = lab.run(ad.Settings(1, 32), budget=8)
    assert lab.batches == 8 and sum(len(b) for b in asked) == 8
    assert nxt.stopped == ad.BUDGET_SPENT and nxt.why.startswith("budget spent: the next step (")


@SWEEP_TIMEOUT
def test_repetitions_come_when_every_count_around_the_answer_is_measured_and_stop_at_the_limit() -> None:
    lab = Lab(SMALL, noise=0.10, seed=2)
    lab.measure(tuple(range(1, 9)))
    settings = ad.Settings(1, 8, max_reps=2)
    nxt = ad.next_step(build(lab.data()), "base", settings, affordable=5)
    if nxt.stopped is None:  # the noise leaves the interval wide: a repetition, every count being measured
        assert len(nxt.counts) == 1 and nxt.why.startswith(f"one more repetition at {nxt.counts[0]}")
    lab.measure(tuple(range(1, 9)))
    done = ad.next_step(build(lab.data()), "base", settings, affordable=5)
    assert done.counts == () and done.stopped in (ad.NO_BETTER_STEP, ad.ANSWER_KNOWN), done.why
    if done.stopped == ad.NO_BETTER_STEP:
        assert "measured 2 times" in done.why and "as narrow as this noise allows" in done.why


@SWEEP_TIMEOUT
def test_a_rising_curve_fills_the_top_of_the_range_then_says_the_peak_lies_beyond() -> None:
    rising = Params(lam=1000.0, sigma=0.0, kappa=0.0)
    lab = Lab(rising, noise=0.01)
    nxt, asked = lab.run(ad.Settings(1, 8))
    assert nxt.stopped == ad.NO_BETTER_STEP and "beyond 8 clients" in nxt.why, nxt.why
    assert sorted(c for batch in asked[1:] for c in batch) == [5, 6, 7]  # the top of the range, once each


def test_too_small_a_range_has_no_answer() -> None:
    nxt = ad.next_step(build(Lab(SMALL).data()), "base", ad.Settings(3, 4), affordable=5)
    assert nxt.stopped == ad.NO_ANSWER and "fewer than three counts" in nxt.why


def test_where_p99_crosses_the_target_is_part_of_the_region() -> None:
    lab = Lab(SMALL, noise=0.05, seed=3)  # p99 = 3 x the mean latency: 6.4 ms at 4 clients, 12.7 ms at 8
    lab.measure((1, 2, 4, 8))
    view, settings = build(lab.data()), ad.Settings(1, 8, p99_target_ms=10.0)
    rec = recommend(view, "base", p99_target_ms=10.0)
    assert rec.verdict == "levels-off" and rec.connections == 4  # flat from 4 (+1% to 8), p99 6.4 ms there
    region = ad._region(view, "base", rec, ad.grid(1, 8), settings)
    assert [c for c, roles in sorted(region.items()) if "where p99 crosses 10 ms (4..8)" in roles] == [4, 5, 6, 7, 8]
    nxt = ad.next_step(view, "base", settings, affordable=5)  # the answer's neighbours are measured first
    assert nxt.counts == (3,) and nxt.why == "3 clients: next to the answer (4), not measured yet", nxt.why
