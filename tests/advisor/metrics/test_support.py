"""Percentile support by MLPerf LoadGen's early-stopping rule, checked against LoadGen's own printed results."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.metrics.distribution import Distribution
from advisor.metrics.support import (
    check_slo,
    min_under_limit,
    n_over_bound,
    percentile_support,
    requests_needed,
)


def test_with_nothing_over_the_limit_the_bar_is_the_geometric_one():
    # p^h < 1%: h > ln(0.01) / ln(p)
    assert min_under_limit(0, 0.95) == 90
    assert min_under_limit(0, 0.99) == 459
    assert min_under_limit(0, 0.90) == 44
    assert min_under_limit(0, 0.50) == 7


@pytest.mark.parametrize("n, discarded", [(2048, 172), (2116, 178), (2145, 181), (7469, 685)])
def test_matches_loadgen_single_stream_early_stopping_output(n, discarded):
    # LoadGen's results summaries ("Processed at least 64 queries (2048). Would discard 172 highest latency
    # queries.") come from the same search over t: t - 1 discarded is the largest t with h(t) + t <= n.
    t = discarded + 1
    assert requests_needed(t, 90.0) <= n < requests_needed(t + 1, 90.0)
    assert min_under_limit(1, 0.90) + 1 == 64  # "Processed at least 64 queries"


def test_each_request_over_the_limit_raises_the_bar():
    needed = [requests_needed(t, 95.0) for t in range(6)]
    assert needed == sorted(needed) and len(set(needed)) == 6


def test_a_run_of_48_requests_never_meets_a_p95_slo():
    for n_over in range(49):
        c = check_slo("ttft_ms", 95.0, 800.0, 48, n_over, observed_ms=100.0 if n_over < 3 else 900.0)
        assert c.status != "met"
    c = check_slo("ttft_ms", 95.0, 800.0, 48, 0, observed_ms=100.0)
    assert c.status == "not established" and c.more_needed == 42
    assert "42 more requests" in c.text()


def test_met_failed_and_not_established():
    assert check_slo("ttft_ms", 95.0, 800.0, 90, 0, 300.0).status == "met"
    assert check_slo("ttft_ms", 95.0, 800.0, 200, 30, 950.0).status == "failed"  # measured p95 over the limit
    assert check_slo("ttft_ms", 95.0, 800.0, 5, 5, None).status == "failed"  # all over: over with 99% confidence
    assert check_slo("ttft_ms", 95.0, 800.0, 5, 1, None).status == "not established"
    mid = check_slo("ttft_ms", 95.0, 800.0, 100, 3, 700.0)
    assert mid.status == "not established" and mid.more_needed == requests_needed(3, 95.0) - 100


def test_percentile_support_lists_what_more_requests_would_buy():
    sup = {s.percentile: s for s in percentile_support(100)}
    assert sup[95.0].supported and not sup[99.0].supported and sup[99.0].more_needed == 359


def test_the_summary_bound_never_undercounts():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(1, 400))
        x = rng.lognormal(5.0, 0.6, n)
        dist = Distribution.from_values(x)
        for limit in rng.choice(x, size=5):
            assert n_over_bound(dist, float(limit)) >= int((x > limit).sum())
        assert n_over_bound(dist, float(x.max())) == 0


def test_failed_requests_decide_a_check_and_say_so():
    """Half of 200 requests failed, the rest fast (p95 of the successful ones 23 ms): failed by errors (issue 40)."""
    exact = check_slo("ttft_ms", 95, 800.0, 200, 100, 23.0, n_failed=100)
    bounded = check_slo("ttft_ms", 95, 800.0, 200, 100, 23.0, n_over_exact=False, n_failed=100)
    for ch in (exact, bounded):  # the failed count is exact even where the latency count is a bound
        assert ch.status == "failed" and ch.failed_by_errors and ch.to_dict()["failed_by_errors"] is True
    # on latency: the measured percentile is over the limit and the few failures alone would not fail it
    slow = check_slo("ttft_ms", 95, 800.0, 300, 40, 900.0, n_failed=1)
    assert slow.status == "failed" and not slow.failed_by_errors
    assert not check_slo("ttft_ms", 95, 800.0, 200, 0, 23.0).failed_by_errors  # met: nothing failed
