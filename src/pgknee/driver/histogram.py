"""A log-bucketed histogram of non-negative integers (latencies in microseconds): constant size,
mergeable, fed a numpy array at a time; count, sum, spread, min and max kept exactly beside it.

Buckets (HdrHistogram's layout, lowest discernible value 1, two significant digits): the values
0..255 have a bucket each; above, each power of two [2^k, 2^(k+1)), k >= 8, is cut into 128 equal
buckets of width 2^(k-7). The bucket of v is

    b = max(0, floor(log2 v) - 7);   index(v) = 128 b + (v >> b)

and bucket i holds the integers lo .. lo + w - 1 with b = max(0, i // 128 - 1), w = 2^b,
lo = (i - 128 b) << b. The range is 0 .. 2^48 - 1 (8.9 years in microseconds) in 5,376 counts
(42 KB, whatever the number of values); a larger value is counted in the top bucket (its min, max
and mean stay exact). Two histograms merge by adding their counts.

Error bound. A percentile is numpy's default ("linear"): rank h = (n - 1) q / 100, the order
statistics x_k and x_k+1 around it (k = floor h), x_k + (h - k)(x_k+1 - x_k). Here each order
statistic is read as the middle of its bucket, lo + (w - 1) / 2, kept within [min, max] (the
first and the last are min and max themselves). A value v in a bucket of width w >= 2 is at
least 128 w, so |middle - v| <= (w - 1) / 2 < v / 256: each order statistic is within 1/256
(0.39 %) of the exact one, and so is their interpolation (its weights are not negative). Every
percentile is therefore within 0.39 % (relative) of numpy.percentile over the same values, for any
distribution in range; values below 256 are exact.

Mean and standard deviation are exact: count, sum and sum of squares are kept as Python integers
(numpy adds squares below 2^26 in int64 blocks that cannot overflow, larger values are added one by
one), the variance is (n S2 - S1^2) / (n (n - 1)) in integers, rounded once. So they do not depend
on how the values were split into arrays or in which order histograms were merged.

HdrHistogram: `counts` is, index for index, the counts array of an HdrHistogram with
lowest_discernible_value 1, highest_trackable_value 2^48 - 1 and 2 significant figures
(sub_bucket_count 256, sub_bucket_half_count 128, unit_magnitude 0, counts_index(v) as above).
A load generator's histogram travels in HdrHistogram's compressed V2 encoding (`to_wire`: a
header, the counts as ZigZag LEB128 with runs of zeros as negative numbers, deflated, base64),
which HdrHistogram's own tools read without converting buckets; the exact count, sum, sum of
squares, min and max travel beside it, so a merged histogram's moments stay exact.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

HALF_MAGNITUDE = 7  # HdrHistogram's sub_bucket_half_count_magnitude for 2 significant figures
HALF = 1 << HALF_MAGNITUDE  # 128 buckets per power of two above 255
LINEAR = 2 * HALF  # 0 .. 255: one bucket per value
TOP_MAGNITUDE = 48
HIGHEST = (1 << TOP_MAGNITUDE) - 1
SIZE = (TOP_MAGNITUDE - HALF_MAGNITUDE + 1) * HALF  # 5376
RELATIVE_ERROR = 1 / LINEAR  # the bound on any percentile's relative error


def bucket_index(values: np.ndarray) -> np.ndarray:
    """Each value's bucket (values are integers in 0 .. HIGHEST)."""
    v = values.astype(np.int64, copy=False)
    # floor(log2(v | 255)): exact in float64 below 2^53
    top = np.frexp((v | (LINEAR - 1)).astype(np.float64))[1].astype(np.int64) - 1
    b = top - HALF_MAGNITUDE
    return (b << HALF_MAGNITUDE) + (v >> b)


def bucket_bounds() -> tuple[np.ndarray, np.ndarray]:
    """Every bucket's lowest value and width."""
    i = np.arange(SIZE, dtype=np.int64)
    b = np.maximum(i // HALF - 1, 0)
    return (i - (b << HALF_MAGNITUDE)) << b, np.int64(1) << b


_SQUARE_BELOW = 1 << 26  # a square below 2^52: 2,048 of them add up below 2^63
_BLOCK = 2048


def _exact_sums(v: np.ndarray) -> tuple[int, int]:
    """The sum and the sum of squares of int64 values, as exact integers."""
    small = v[v < _SQUARE_BELOW]
    starts = np.arange(0, small.size, _BLOCK)
    total = sum(np.add.reduceat(small, starts).tolist())  # no small value: no starts, an empty sum, 0
    total_sq = sum(np.add.reduceat(small * small, starts).tolist())
    if small.size < v.size:
        large = [int(x) for x in v[v >= _SQUARE_BELOW].tolist()]
        total, total_sq = total + sum(large), total_sq + sum(x * x for x in large)
    return total, total_sq


_LO, _WIDTH = bucket_bounds()
_MIDDLE = _LO + (_WIDTH - 1) / 2.0


class Histogram:
    """Counts of integer values in log-linear buckets, with their exact count, sum, sum of squares,
    min and max."""

    __slots__ = ("counts", "count", "total", "total_sq", "min", "max")

    def __init__(self) -> None:
        self.counts = np.zeros(SIZE, dtype=np.int64)
        self.count = 0
        self.total = 0  # the values' sum, exact (a Python int)
        self.total_sq = 0  # the sum of their squares, exact
        self.min = 0
        self.max = 0

    def record(self, values: np.ndarray) -> None:
        """Count an array of non-negative integers."""
        n = int(values.size)
        if n == 0:
            return
        v = values.astype(np.int64, copy=False)
        lo, hi = int(v.min()), int(v.max())
        if lo < 0:
            raise ValueError(f"a histogram of non-negative values was given {lo}")
        self.counts += np.bincount(bucket_index(np.minimum(v, HIGHEST)), minlength=SIZE)
        total, total_sq = _exact_sums(v)
        self._merge_moments(n, total, total_sq, lo, hi)

    def _merge_moments(self, n: int, total: int, total_sq: int, lo: int, hi: int) -> None:
        self.min, self.max = (min(self.min, lo), max(self.max, hi)) if self.count else (lo, hi)
        self.count += n
        self.total += total
        self.total_sq += total_sq

    def merge(self, other: Histogram) -> None:
        """Add another histogram's values to this one."""
        if other.count == 0:
            return
        self.counts += other.counts
        self._merge_moments(other.count, other.total, other.total_sq, other.min, other.max)

    def __add__(self, other: Histogram) -> Histogram:
        out = Histogram()
        out.merge(self)
        out.merge(other)
        return out

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan

    @property
    def stddev(self) -> float:
        """The sample standard deviation (ddof=1); 0 for a single value."""
        n = self.count
        return math.sqrt((n * self.total_sq - self.total * self.total) / (n * (n - 1))) if n > 1 else 0.0

    def count_at(self, value: int) -> int:
        """How many values share value's bucket."""
        return int(self.counts[int(bucket_index(np.array([min(value, HIGHEST)]))[0])])

    def percentiles(self, qs: Sequence[float]) -> list[float]:
        """numpy.percentile's linear interpolation, each within RELATIVE_ERROR of the exact one."""
        if self.count == 0:
            raise ValueError("percentiles of an empty histogram")
        cum = np.cumsum(self.counts)
        h = (self.count - 1) * np.asarray(qs, dtype=np.float64) / 100.0
        k = np.floor(h).astype(np.int64)
        below, above = self._order_stats(cum, k), self._order_stats(cum, np.minimum(k + 1, self.count - 1))
        return [float(x) for x in below + (h - k) * (above - below)]

    def _order_stats(self, cum: np.ndarray, k: np.ndarray) -> np.ndarray:
        """The k-th smallest values (0-based), read from their buckets."""
        x = np.clip(_MIDDLE[np.searchsorted(cum, k, side="right")], self.min, self.max)
        x = np.where(k == 0, float(self.min), x)
        return np.where(k == self.count - 1, float(self.max), x)


# HdrHistogram's V2 encoding cookies (word size 8: | 0x10), plain and deflated
V2_COOKIE, V2_COMPRESSED_COOKIE = 0x1C849303 | 0x10, 0x1C849304 | 0x10
_V2_HEADER = struct.Struct(">iiiiqqd")  # cookie, payload length, normalizing offset, digits, lowest, highest, ratio


def _zigzag(n: int, out: bytearray) -> None:
    z = (n << 1) ^ (n >> 63)
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return


def encode_v2(counts: np.ndarray) -> str:
    """The counts as HdrHistogram's compressed V2 encoding, base64 (what its decode() reads)."""
    nonzero = np.flatnonzero(counts)
    payload = bytearray()
    i, last = 0, int(nonzero[-1]) if nonzero.size else -1
    values = counts.tolist()
    while i <= last:
        if values[i]:
            _zigzag(values[i], payload)
            i += 1
            continue
        run = int(nonzero[np.searchsorted(nonzero, i)]) - i  # zeros up to the next count
        _zigzag(-run if run > 1 else 0, payload)
        i += run
    body = zlib.compress(_V2_HEADER.pack(V2_COOKIE, len(payload), 0, 2, 1, HIGHEST, 1.0) + bytes(payload))
    return base64.b64encode(struct.pack(">ii", V2_COMPRESSED_COOKIE, len(body)) + body).decode("ascii")


def decode_v2(text: str) -> np.ndarray:
    """The counts of an encode_v2 text (this layout only: 2 digits, lowest 1, highest 2^48 - 1)."""
    raw = base64.b64decode(text, validate=True)
    cookie, length = struct.unpack(">ii", raw[:8])
    inner = zlib.decompress(raw[8:8 + length])
    got = _V2_HEADER.unpack(inner[:_V2_HEADER.size])
    if cookie != V2_COMPRESSED_COOKIE or got[0] != V2_COOKIE or got[3:6] != (2, 1, HIGHEST):
        raise ValueError("not an HdrHistogram V2 histogram of pgknee's layout")
    counts = np.zeros(SIZE, dtype=np.int64)
    i, z, shift = 0, 0, 0
    for byte in inner[_V2_HEADER.size:_V2_HEADER.size + got[1]]:
        z |= (byte & 0x7F) << shift
        shift += 7
        if byte & 0x80:
            continue
        n, z, shift = (z >> 1) ^ -(z & 1), 0, 0
        if n < 0:
            i += -n
        else:
            counts[i] = n
            i += 1
    return counts


def to_wire(h: Histogram) -> dict[str, Any]:
    """A histogram as JSON: its counts in HdrHistogram's V2 encoding, its exact moments beside."""
    return {"hdr_v2": encode_v2(h.counts), "count": h.count, "total": h.total, "total_sq": h.total_sq,
            "min": h.min, "max": h.max}


def from_wire(d: dict[str, Any]) -> Histogram:
    h = Histogram()
    h.counts = decode_v2(str(d["hdr_v2"]))
    if int(h.counts.sum()) != int(d["count"]):
        raise ValueError("a histogram whose counts do not add up to its count")
    h.count, h.total, h.total_sq, h.min, h.max = (int(d[k]) for k in ("count", "total", "total_sq", "min", "max"))
    return h
