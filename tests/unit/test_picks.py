"""How an application picks the values it looks rows up by, told from the rows its calls returned
(workloads.captured.picks), without a server. The expected figures are worked out by hand from a
column whose every value's rows are known, not read from the code."""

from __future__ import annotations

import pytest

from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured import picks, sqlmap
from pgknee.workloads.captured.manifest import Param

# 1,000 rows over ten values: value 1 holds 910 of them, values 2..10 ten each (all common values)
SKEWED = gen.ColumnStats("integer", 0.0, 10, tuple(str(v) for v in range(1, 11)), (0.91,) + (0.01,) * 9, (), 1000)
# a unique key of 1,000 rows, 1..1000
UNIQUE = gen.ColumnStats("integer", 0.0, -1, (), (), ("1", "500", "1000"), 1000)


def test_only_a_plain_lookup_of_one_column_lets_its_rows_speak() -> None:
    assert sqlmap.parse("SELECT * FROM social.tweets WHERE uid IN ($1, $2, $3)").picks == (1, 2, 3)
    assert sqlmap.parse("SELECT name FROM users WHERE id = $1").picks == (1,)
    # a LIMIT caps the rows, an aggregate folds them, a join, a second condition or a range chooses them otherwise
    for other in ("SELECT * FROM t WHERE uid = $1 LIMIT $2", "SELECT count(*) FROM t WHERE a = $1",
                  "SELECT a FROM t, u WHERE a = $1", "SELECT a FROM t WHERE a = $1 AND b = $2",
                  "SELECT a FROM t WHERE a < $1", "SELECT a FROM t WHERE a NOT IN ($1, $2)",
                  "UPDATE t SET b = 1 WHERE a = $1", "SELECT DISTINCT a FROM t WHERE a = $1"):
        assert sqlmap.parse(other).picks == (), other


def test_a_value_picked_by_its_rows_or_by_its_keys_returns_what_each_predicts() -> None:
    # by rows: value 1 comes up 91% of the time with 910 rows, each other 1% with 10: 0.91*910 + 0.09*10 = 829;
    # by keys, each of the ten alike: 1000 / 10 = 100 rows
    assert picks.per_value(picks.classes(SKEWED), 10) == pytest.approx((829.0, 100.0))
    keyed = picks.judge(SKEWED, 10, 1, 110.0)
    assert keyed.keyed and keyed.distinct == 1
    assert not picks.judge(SKEWED, 10, 1, 800.0).keyed
    # the nearer in ratio: 250 is 2.5 times 100 and 3.3 times below 829; 300 is 3.0 and 2.8
    assert picks.judge(SKEWED, 10, 1, 250.0).keyed
    assert not picks.judge(SKEWED, 10, 1, 300.0).keyed


def test_the_histogram_spreads_the_other_values_by_its_buckets_widths() -> None:
    # 220 rows over 110 values, no common one: a bucket 0..10 and a bucket 10..100, 110 rows each; the first
    # holds 11 of the values (10 rows each), the second 99 (110/99 rows each)
    st = gen.ColumnStats("integer", 0.0, 110, (), (), ("0", "10", "100"), 220)
    got = sorted(picks.classes(st))
    assert got == [pytest.approx((11.0, 10.0)), pytest.approx((99.0, 110 / 99))]
    assert picks.per_value(got, 110)[0] == pytest.approx((11 * 10 * 10 + 99 * (110 / 99) ** 2) / 220)


def test_a_unique_key_cannot_tell_the_ways_apart_but_its_rows_count_an_in_lists_values() -> None:
    judged = picks.judge(UNIQUE, 1000, 20, 10.2)  # 20 values a call, 10 rows: half the list repeats a value
    assert not judged.keyed and judged.distinct == 10
    assert picks.judge(UNIQUE, 1000, 20, 19.6).distinct == 20
    # nothing to tell: the table's rows never counted, or no call returned a row; nor with no keys known
    for nothing in (picks.judge(replace_rows(UNIQUE, 0), 1000, 1, 1.0), picks.judge(UNIQUE, 1000, 1, 0.0)):
        assert not nothing.apart and not nothing.keyed and nothing.distinct == 1
    assert picks.judge(SKEWED, picks.NO_KEYS.count, 1, 110.0).by_keys == 0.0


def replace_rows(st: gen.ColumnStats, rows: float) -> gen.ColumnStats:
    return gen.ColumnStats(st.type, st.null_frac, st.n_distinct, st.mcv, st.mcf, st.histogram, rows)


def test_whole_numbers_filling_their_span_are_keys_of_their_own() -> None:
    keys = picks.whole_span(gen.ColumnStats("integer", 0.0, 4990, ("1", "2"), (0.3, 0.1), ("3", "2000", "5000"),
                                            50_000))
    assert keys is not None and keys.count == 5000 and keys.stats.histogram == ("1", "5000")
    # 10 values spread over a million: not keys to draw from; nor is text
    assert picks.whole_span(gen.ColumnStats("integer", 0.0, 10, (), (), ("1", "1000000"), 100)) is picks.NO_KEYS
    assert picks.whole_span(gen.ColumnStats("text", 0.0, 2, ("a", "b"), (0.5, 0.5), (), 10)) is picks.NO_KEYS


def test_an_in_list_picked_by_keys_draws_its_distinct_values_and_repeats_the_last() -> None:
    ns = (1, 2, 3, 4)
    each = {n: (Param(n, "column", "s.t.uid", "integer", "by rows"), gen.draw(f"s03_p{n}", SKEWED)) for n in ns}
    keys = picks.Keys(gen.ColumnStats("integer", histogram=("1", "5000")), 5000, "the keys of s.users.uid")
    judged = picks.Judged(by_rows=3316.0, by_keys=40.0, seen=20.0, keyed=True, distinct=2)
    out = picks.redrawn("s03", each, ns, judged, keys)
    assert [out[n][1].lines for n in ns] == [("\\set s03_p1 random(1, 5000)",), ("\\set s03_p2 random(1, 5000)",),
                                             (), ()]
    assert [out[n][1].placeholder for n in ns] == [":s03_p1", ":s03_p2", ":s03_p2", ":s03_p2"]
    assert out[1][0].drawn.startswith("the keys of s.users.uid: picked each key alike")
    assert out[2][0].drawn.endswith(": as $1") and out[3][0].drawn.startswith("the same value as $2")


def test_a_lookup_the_rows_say_nothing_of_is_left_as_drawn_and_unsaid() -> None:
    each = {1: (Param(1, "column", "s.items.id", "integer", "by rows"), gen.draw("s09_p1", UNIQUE))}
    judged = picks.judge(UNIQUE, 1000, 1, 1.0)
    assert not judged.apart
    assert picks.redrawn("s09", each, (1,), judged, picks.NO_KEYS) is each
