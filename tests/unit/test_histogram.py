"""The log-bucketed latency histogram (driver.histogram) against numpy's exact figures."""

from __future__ import annotations

import numpy as np
import pytest

from pgknee.driver.histogram import HIGHEST, RELATIVE_ERROR, SIZE, Histogram, bucket_bounds, bucket_index
from pgknee.driver.measure import latency_stats

QS = [0, 0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100]
HOUR_US = 3_600_000_000


def _samples() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(15)
    return {
        "log-normal (skewed)": rng.lognormal(np.log(2_000), 1.0, 100_000),
        "bimodal: fast reads, slow lock waits": np.concatenate([rng.normal(400, 40, 90_000),
                                                                rng.normal(1_500_000, 200_000, 10_000)]),
        "pareto tail": (rng.pareto(1.1, 50_000) + 1) * 300,
        "1 to 300 us": rng.integers(1, 300, 20_000),
        "hours": rng.uniform(0.5 * HOUR_US, 5 * HOUR_US, 20_000),
        "1 us to hours, log-uniform": np.exp(rng.uniform(0, np.log(5 * HOUR_US), 100_000)),
        "a constant": np.full(1_000, 123_457),
        "one value": np.array([987_654]),
        "two values far apart": np.array([3, 7_000_000]),
    }


def _hist(values: np.ndarray, parts: int = 1) -> Histogram:
    h = Histogram()
    for part in np.array_split(values, parts):
        h.record(part)
    return h


@pytest.mark.parametrize("name", list(_samples()))
def test_percentiles_within_the_bound_of_numpys(name: str) -> None:
    values = np.maximum(np.round(_samples()[name]), 0).astype(np.int64)
    h = _hist(values, parts=7)
    exact = np.percentile(values, QS)
    got = np.array(h.percentiles(QS))
    err = np.abs(got - exact) / exact
    assert err.max() <= RELATIVE_ERROR, f"{name}: worst {err.max():.5f} at q={QS[int(err.argmax())]}"
    assert RELATIVE_ERROR < 0.01
    assert (got[0], got[-1]) == (values.min(), values.max())  # q=0 and q=100 are min and max, exact


@pytest.mark.parametrize("name", list(_samples()))
def test_count_sum_mean_stddev_min_max_are_exact(name: str) -> None:
    values = np.maximum(np.round(_samples()[name]), 0).astype(np.int64)
    h = _hist(values, parts=5)
    assert (h.count, h.total, h.min, h.max) == (values.size, int(values.sum()), values.min(), values.max())
    assert h.total_sq == sum(x * x for x in values.tolist())  # exact, even past int64 (hours squared)
    assert h.mean == pytest.approx(values.mean(), rel=1e-12)
    assert h.stddev == pytest.approx(values.std(ddof=1) if values.size > 1 else 0.0, rel=1e-9, abs=1e-9)
    assert int(h.counts.sum()) == values.size


def test_small_values_are_exact() -> None:
    values = np.array([0, 0, 1, 2, 5, 17, 255, 100, 3, 3])
    h = _hist(values)
    assert h.percentiles(QS) == pytest.approx(np.percentile(values, QS).tolist(), rel=1e-12)  # up to rounding


def test_merging_is_recording_both() -> None:
    rng = np.random.default_rng(3)
    a = np.round(rng.lognormal(8, 1.5, 30_000)).astype(np.int64)
    b = np.round(rng.lognormal(12, 0.5, 10_000)).astype(np.int64)
    ha, hb, both = _hist(a), _hist(b), _hist(np.concatenate([a, b]))
    merged = ha + hb
    assert (merged.counts == both.counts).all()
    assert (merged.count, merged.total, merged.min, merged.max) == (both.count, both.total, both.min, both.max)
    assert (merged.total_sq, merged.stddev) == (both.total_sq, both.stddev)  # exact: in any order
    assert merged.percentiles(QS) == both.percentiles(QS)
    assert ha.count == a.size and hb.count == b.size  # + leaves its operands alone
    ha.merge(Histogram())  # merging nothing changes nothing
    assert ha.count == a.size and (Histogram() + ha).percentiles(QS) == ha.percentiles(QS)


def test_empty() -> None:
    h = Histogram()
    h.record(np.zeros(0, dtype=np.int64))
    assert h.count == 0 and h.total == 0 and h.stddev == 0.0 and np.isnan(h.mean)
    assert latency_stats(h) is None
    with pytest.raises(ValueError, match="empty"):
        h.percentiles([50])


def test_negative_values_are_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        Histogram().record(np.array([5, -1]))


def test_beyond_the_range_the_top_bucket_counts_and_min_max_mean_stay_exact() -> None:
    big = np.array([HIGHEST + 10, HIGHEST * 4], dtype=np.int64)
    h = _hist(big)
    assert h.counts[-1] == 2 and (h.min, h.max, h.total) == (HIGHEST + 10, HIGHEST * 4, int(big.sum()))
    assert h.percentiles([0, 100]) == [HIGHEST + 10, HIGHEST * 4]


def test_buckets_tile_the_range_each_narrow_enough() -> None:
    lo, width = bucket_bounds()
    assert lo.size == SIZE == 5376
    assert lo[0] == 0 and (lo[1:] == lo[:-1] + width[:-1]).all() and lo[-1] + width[-1] - 1 == HIGHEST
    assert (width[:256] == 1).all() and (width[256:] * 128 <= lo[256:]).all()
    v = np.concatenate([np.arange(100_000), np.random.default_rng(1).integers(0, HIGHEST + 1, 100_000), [HIGHEST]])
    i = bucket_index(v)
    assert ((lo[i] <= v) & (v < lo[i] + width[i])).all()


def test_the_layout_is_hdrhistograms() -> None:
    """HdrHistogram's counts index (lowest discernible 1, 2 significant figures: sub-bucket count 256),
    written after its Java source with a count of leading zeros: the same index for every value."""

    def hdr_index(value: int) -> int:
        half_magnitude, unit_magnitude, sub_bucket_mask = 7, 0, 255
        leading_zero_count_base = 64 - unit_magnitude - half_magnitude - 1
        bucket = leading_zero_count_base - (64 - (value | sub_bucket_mask).bit_length())
        sub_bucket = value >> (bucket + unit_magnitude)
        return ((bucket + 1) << half_magnitude) + (sub_bucket - (1 << half_magnitude))

    rng = np.random.default_rng(2)
    values = [0, 1, 255, 256, 257, 511, 512, 1000, 123_456_789, HIGHEST, *rng.integers(0, HIGHEST, 2_000).tolist()]
    assert bucket_index(np.array(values)).tolist() == [hdr_index(v) for v in values]


def test_the_wire_form_is_hdrhistograms_v2_encoding_both_ways() -> None:
    """What an agent uploads: HdrHistogram's own implementation decodes it to the same counts and
    percentiles, and what it encodes decodes here to the same counts; the moments travel exact."""
    from hdrh.histogram import HdrHistogram

    from pgknee.driver.histogram import decode_v2, from_wire, to_wire

    rng = np.random.default_rng(7)
    values = rng.lognormal(7, 1.3, 20_000).astype(np.int64)
    h = Histogram()
    h.record(values)
    wire = to_wire(h)
    theirs = HdrHistogram.decode(wire["hdr_v2"])
    assert theirs.get_total_count() == h.count == 20_000
    assert [theirs.get_count_at_index(i) for i in range(0, 5376, 7)] == h.counts[::7].tolist()
    back = from_wire(wire)
    assert (back.counts == h.counts).all() and (back.total, back.total_sq, back.min, back.max) == \
        (h.total, h.total_sq, h.min, h.max)
    ref = HdrHistogram(1, 2**48 - 1, 2)
    for v in values[:3000].tolist():
        ref.record_value(v)
    mine = Histogram()
    mine.record(values[:3000])
    encoded = ref.encode()
    assert (decode_v2(encoded.decode() if isinstance(encoded, bytes) else encoded) == mine.counts).all()
