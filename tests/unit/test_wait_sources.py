"""The second wait source's arithmetic: pg_wait_sampling's profile diff, the probes counted on a
reference session, AAS per event, and the comparison with pg_stat_activity's samples."""

from __future__ import annotations

import math

import pytest

from pgknee.analyze.waitsource import compare_sources
from pgknee.collect.waitsampling import assumed_probes, events_of, probes_of, profile_diff, step_profile
from pgknee.model.samples import WaitSampling
from pgknee.report.waitsource import agreement_line

REF = 900  # the reference session's pid


def test_profile_diff_counts_what_was_added() -> None:
    before = {(1, "IO", "WALSync"): 10, (2, "LWLock", "WALWrite"): 5, (REF, "Timeout", "PgSleep"): 100}
    after = {(1, "IO", "WALSync"): 25, (2, "LWLock", "WALWrite"): 5, (3, "IO", "WALSync"): 7,
             (REF, "Timeout", "PgSleep"): 1100}
    diff = profile_diff(before, after)
    assert diff == {(1, "IO", "WALSync"): 15, (3, "IO", "WALSync"): 7, (REF, "Timeout", "PgSleep"): 1000}
    # a reset in between (a server restart) gives no negative count
    assert profile_diff({(1, "IO", "WALSync"): 50}, {(1, "IO", "WALSync"): 3}) == {}
    assert probes_of(diff, REF) == 1000 and probes_of(diff, 12345) == 0


def test_only_the_benchmarks_backends_are_kept() -> None:
    diff = {(1, "IO", "WALSync"): 15, (3, "IO", "WALSync"): 7, (4, "LWLock", "WALWrite"): 30,
            (77, "Activity", "WalWriterMain"): 1000, (REF, "Timeout", "PgSleep"): 1000}
    assert events_of(diff, {1, 3, 4}) == (("LWLock", "WALWrite", 30), ("IO", "WALSync", 22))


def test_step_profile_counts_probes_on_the_reference_and_falls_back_to_the_period() -> None:
    before = {(REF, "Timeout", "PgSleep"): 0}
    after = {(1, "IO", "WALSync"): 490, (REF, "Timeout", "PgSleep"): 980}
    p = step_profile(before, after, 10.0, frozenset({1, 2}), REF, 10)
    assert p == WaitSampling(980, True, 10.0, 2, (("IO", "WALSync", 490),))
    # the real period is ~10.2 ms: counting the probes gives AAS 0.5, assuming 10 ms 0.49
    assert 490 / p.probes == pytest.approx(0.5)
    assumed = step_profile(before, after, 10.0, frozenset({1}), None, 10)
    assert (assumed.probes, assumed.probes_counted) == (1000, False) == (assumed_probes(10.0, 10), False)


def _profile(probes: int, counts: tuple[tuple[str, str, int], ...], window_s: float = 10.0) -> WaitSampling:
    return WaitSampling(probes, True, window_s, 4, counts)


def test_comparison_per_event_and_agreement() -> None:
    # pg_stat_activity: 100 snapshots; WALWrite AAS 1.5, WALSync 0.5, CPU 1.0, ClientRead 0.2
    sampled = [("LWLock", "WALWrite", 150), ("CPU", "running", 100), ("IO", "WALSync", 50),
               ("Client", "ClientRead", 20)]
    # pg_wait_sampling, two steps of 980 probes: WALWrite 1.45, WALSync 0.52, ClientRead 2.0 (idle time too)
    steps = [_profile(980, (("LWLock", "WALWrite", 1421), ("IO", "WALSync", 510), ("Client", "ClientRead", 1960)))] * 2
    c = compare_sources(sampled, 100, steps)
    assert c is not None
    assert (c.steps, c.probes, c.snapshots) == (2, 1960, 100)
    assert c.profile_hz == pytest.approx(98.0) and c.sampled_hz == pytest.approx(5.0)
    rows = {(r.wait_event_type, r.wait_event): r for r in c.rows}
    ww = rows[("LWLock", "WALWrite")]
    assert (ww.sampled, ww.profile) == (pytest.approx(1.5), pytest.approx(1.45))
    assert ww.sampled_err == pytest.approx(1.5 / math.sqrt(150)) and ww.comparable and not ww.beyond
    assert rows[("CPU", "running")].profile is None and not rows[("CPU", "running")].comparable
    assert not rows[("Client", "ClientRead")].comparable and not rows[("Client", "ClientRead")].beyond
    # the totals compare WALWrite and WALSync only: 2.0 against 1.97
    assert (c.sampled_total, c.profile_total) == (pytest.approx(2.0), pytest.approx(1931 / 980))
    assert c.agree and c.flagged == () and c.total_diff_pct == pytest.approx((2.0 / (1931 / 980) - 1) * 100)
    assert "2.00 (pg_stat_activity) vs 1.97 (pg_wait_sampling), +1.5%: agree within" in agreement_line(c)


def test_an_event_beyond_the_sampling_error_is_flagged() -> None:
    sampled = [("LWLock", "WALWrite", 300), ("IO", "WALSync", 50)]  # 3000 snapshots: WALWrite 0.1
    steps = [_profile(10_000, (("LWLock", "WALWrite", 3000), ("IO", "WALSync", 160)), window_s=100.0)]  # 0.3
    c = compare_sources(sampled, 3000, steps)
    assert c is not None and c.flagged == ("LWLock:WALWrite",) and not c.agree
    assert "differ beyond the sampling error" in agreement_line(c) and "LWLock:WALWrite" in agreement_line(c)
    # an event one source never saw is not flagged on the other's tiny error alone
    few = compare_sources([("LWLock", "WALWrite", 100)], 100, [_profile(1000, (("LWLock", "WALWrite", 1000),
                                                                                ("IO", "WALWrite", 20)))])
    assert few is not None and few.flagged == ()


def test_no_profile_no_comparison() -> None:
    assert compare_sources([("IO", "WALSync", 5)], 100, []) is None
    assert compare_sources([("IO", "WALSync", 5)], 0, [_profile(1000, ())]) is None
    assert compare_sources([("IO", "WALSync", 5)], 100, [_profile(0, ())]) is None
