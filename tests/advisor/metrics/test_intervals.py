"""The order-statistic interval of the median: exact coverage, stated honestly, and it holds in simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.metrics.intervals import Interval, coverage_table, median_interval, order_statistic_coverage, rank_for


def test_coverage_is_the_exact_binomial_figure():
    assert order_statistic_coverage(3, 1) == pytest.approx(0.75)  # 1 - 2 / 8
    assert order_statistic_coverage(5, 1) == pytest.approx(0.9375)
    assert order_statistic_coverage(6, 1) == pytest.approx(1 - 2 / 64)
    assert order_statistic_coverage(6, 2) == pytest.approx(1 - 2 * 7 / 64)
    assert order_statistic_coverage(9, 2) == pytest.approx(1 - 2 * 10 / 512)


def test_three_repeats_cannot_claim_95_percent():
    iv = median_interval([10.0, 30.0, 20.0])
    assert (iv.value, iv.low, iv.high) == (20.0, 10.0, 30.0)
    assert iv.coverage == pytest.approx(0.75)
    assert "75% interval" in iv.text()


def test_the_narrowest_interval_that_reaches_the_target_is_picked():
    assert rank_for(6) == 1 and rank_for(9) == 2 and rank_for(20) == 6
    iv = median_interval(range(1, 10))  # 9 repeats: [x(2), x(8)]
    assert (iv.low, iv.high) == (2.0, 8.0) and iv.coverage >= 0.95
    for _n, j, cov in coverage_table(12):
        assert cov >= 0.95 or j == 1  # below 95% only when even the widest interval is short of it


def test_one_run_has_no_interval():
    iv = median_interval([42.0])
    assert iv.is_point and iv.coverage is None and iv.text() == "42"
    with pytest.raises(ValueError):
        median_interval([])


def test_monotone_maps_keep_the_interval_and_decreasing_ones_swap_its_ends():
    tput = median_interval([100.0, 120.0, 110.0, 90.0, 130.0, 105.0])
    cost = tput.map(lambda tps: 3.6 / tps, decreasing=True)  # $/token falls as tokens/s rise
    assert cost.low == pytest.approx(3.6 / 130.0) and cost.high == pytest.approx(3.6 / 90.0)
    assert cost.coverage == tput.coverage


def test_overlap_is_symmetric_and_touching_counts():
    a = Interval(10, 8, 12, 6, 0.97, "m")
    assert a.overlaps(Interval(13, 12, 15, 6, 0.97, "m")) and Interval(13, 12, 15, 6, 0.97, "m").overlaps(a)
    assert not a.overlaps(Interval(14, 12.5, 15, 6, 0.97, "m"))


@pytest.mark.parametrize("draw", [
    lambda rng, n: rng.lognormal(3.0, 0.4, n),  # skewed, like latencies
    lambda rng, n: 100 + rng.standard_t(2, n),  # heavy tails
    lambda rng, n: rng.exponential(5.0, n),
])
@pytest.mark.parametrize("confidence", [0.95, 0.75])
def test_stated_coverage_holds_over_200_seeded_trials(draw, confidence):
    rng = np.random.default_rng(15)
    true_median = float(np.median(draw(np.random.default_rng(0), 2_000_000)))
    trials, hits, stated = 200, 0, None
    for _ in range(trials):
        iv = median_interval(draw(rng, 6), confidence)
        stated = iv.coverage
        hits += iv.contains(true_median)
    assert stated is not None
    sd = math.sqrt(stated * (1 - stated) / trials)
    assert abs(hits / trials - stated) <= 3.5 * sd + 0.005, (hits, stated)
