"""Distribution statistics and the n-gating of percentiles."""

from __future__ import annotations

import json
import math

import pytest

from advisor.metrics import Distribution

approx = pytest.approx


def test_small_sample_reports_only_p50():
    d = Distribution.from_values([4.0, 1.0, 3.0, 2.0])
    assert (d.n, d.mean, d.min, d.max, d.p50) == (4, 2.5, 1.0, 4.0, 2.5)
    assert d.stdev == approx(math.sqrt(1.25))  # population stdev
    assert d.p90 is None and d.p95 is None and d.p99 is None and d.p99_9 is None


def test_percentiles_appear_at_their_sample_sizes():
    # numpy linear interpolation: position q/100 * (n - 1) between sorted values
    assert Distribution.from_values(range(1, 10)).p90 is None
    d10 = Distribution.from_values(range(1, 11))
    assert d10.p90 == approx(9.1) and d10.p95 is None
    d20 = Distribution.from_values(range(1, 21))
    assert d20.p95 == approx(19.05) and d20.p90 == approx(18.1) and d20.p99 is None
    d100 = Distribution.from_values(range(1, 101))
    assert d100.p99 == approx(99.01) and d100.p99_9 is None
    assert Distribution.from_values(range(99)).p99 is None
    d1000 = Distribution.from_values(range(1000))
    assert d1000.p99_9 == approx(998.001)


def test_empty_sample():
    d = Distribution.from_values([])
    assert d.n == 0
    assert all(v is None for k, v in d.to_dict().items() if k != "n")


def test_non_finite_values_are_a_bug():
    with pytest.raises(AssertionError):
        Distribution.from_values([1.0, float("nan")])


def test_round_trip_through_json():
    for values in ([], [3.0], list(range(25))):
        d = Distribution.from_values(values)
        back = Distribution.from_dict(json.loads(json.dumps(d.to_dict(), allow_nan=False)))
        assert back == d
    assert Distribution.from_dict({"n": 0}) == Distribution(n=0)  # a percentile left out reads as not reported
    with pytest.raises(ValueError, match="missing n"):
        Distribution.from_dict({"p50": 1.0})
    with pytest.raises(ValueError, match="p95 is str"):
        Distribution.from_dict({"n": 30, "p95": "fast"})


def test_one_percentile_map_and_at():
    from advisor.metrics.distribution import PERCENTILES, percentile_key
    from scenarios.types import SLO_PERCENTILES, SLOs

    assert tuple(q for _, q, _ in PERCENTILES) == SLO_PERCENTILES  # an SLO names only what a run reports
    d = Distribution.from_values(range(1, 31))  # n=30: p95 reported, p99 needs 100
    assert d.at(95) == d.p95 and d.at(99) is None
    assert percentile_key(99.9) == "p99_9"
    with pytest.raises(ValueError, match="not a percentile advisor reports"):
        d.at(97.5)
    with pytest.raises(ValueError, match="use one of 50, 90, 95, 99, 99.9"):
        SLOs(ttft_ms=100, percentile=97.5)
