"""verdict(): when a run can be trusted, and what it tells the user when it cannot."""

from __future__ import annotations

import itertools
import json

import pytest

from advisor.metrics import Verdict, summarize, verdict
from advisor.metrics.lag import LagCheck
from advisor.metrics.saturation import SaturationSignals
from advisor.metrics.summary import RunSummary
from scenarios.types import SLOs
from tests.advisor.metrics.make import MS, open_run


def judge(records, window, *, offered_rps=2.0, mode="open", **kw) -> Verdict:
    s = summarize(records, mode=mode, slos=SLOs(ttft_ms=500), window_ns=window if mode == "open" else None,
                  offered_rps=offered_rps)
    return verdict(s, mode=mode, **kw)


def test_healthy_run_is_valid():
    v = judge(*open_run(120))
    assert v == Verdict("VALID", ())


def test_too_few_requests_for_p95():
    v = judge(*open_run(50))
    assert v.status == "INVALID"
    assert v.reasons[0].startswith("n too small for p95 (n=50)")


def test_load_generator_lag_is_reported_as_a_figure():
    v = judge(*open_run(120, lag_ms=8.0))
    assert v.status == "INVALID"
    assert len(v.reasons) == 1 and "120 of 120 sends were later than the 5 ms limit" in v.reasons[0]


def _late(records, late: set[int], lag_ms: float):
    for i in late:
        records[i].t_send_ns += round(lag_ms * 1e6)
        records[i].chunk_t_ns = [t + round(lag_ms * 1e6) for t in records[i].chunk_t_ns]
    return records


def test_a_few_slow_sends_in_a_short_run_do_not_flip_the_verdict():
    """118 requests at 2 req/s: the empirical p99 is the 2nd-largest lag, a coin toss; the rule needs evidence."""
    records, window = open_run(118)
    assert judge(_late(records, {10, 90}, 6.0), window).status == "VALID"  # 2 of 118 late: could be 1% luck
    records, window = open_run(118)
    v = judge(_late(records, {10, 40, 70, 100}, 6.0), window)  # 4 of 118: more than 1% late, at 95% confidence
    assert v.status == "INVALID" and "4 of 118 sends were later than the 5 ms limit" in v.reasons[0]


def test_the_lag_limit_grows_with_the_latencies_and_gaps_being_measured():
    # TTFT 2 s at 1 req/s: 5% of the TTFT median is 100 ms and 10% of the gap is 100 ms, so 60 ms of lag is fine
    records, window = open_run(120, gap_ms=1000.0, ttft_ms=2000.0, lag_ms=60.0)
    assert judge(records, window, offered_rps=1.0).status == "VALID"
    records, window = open_run(120, gap_ms=1000.0, ttft_ms=2000.0, lag_ms=150.0)
    v = judge(records, window, offered_rps=1.0)
    assert v.status == "INVALID" and "100 ms limit" in v.reasons[0]
    # a fast engine at a high rate: the limit stays at 5 ms, never above
    records, window = open_run(120, gap_ms=2.0, ttft_ms=1.0, step_ms=0.1, lag_ms=6.0)
    assert "5 ms limit" in judge(records, window, offered_rps=500.0).reasons[0]


def test_error_rate_over_the_bound():
    v = judge(*open_run(125, fail={3, 40, 77, 100, 120}))  # 5 of 125 = 4%
    assert v.status == "INVALID"
    assert any("4.0% of measured requests failed (5 of 125: http_5xx x5)" in r for r in v.reasons)
    assert judge(*open_run(125, fail={3, 40, 77, 100, 120}), max_error_rate=0.05).status == "VALID"


def test_engine_slower_than_arrivals_is_saturated():
    # one request every 500 ms, served one at a time for 1 s each: 60 of 120 finish inside the 60 s window
    v = judge(*open_run(120, service_ms=1000.0))
    assert v.status == "SATURATED"
    assert "saturated at 2 req/s offered (completed 1 req/s)" in v.reasons[0]
    assert "median TTFT_sched rose" in v.reasons[0]


def test_growing_queue_alone_is_saturated():
    # every request completes in the window, but requests late in the window wait much longer
    records, window = open_run(120)
    for i, r in enumerate(records):
        delay = i * 20 * 1_000_000  # up to 2.4 s more before the first token
        r.chunk_t_ns = [t + delay for t in r.chunk_t_ns]
    v = judge(records, (window[0], window[1] + 3_000_000_000), offered_rps=None)
    assert v.status == "SATURATED"
    assert "requests completed slower" not in v.reasons[0]
    assert "median TTFT_sched rose from" in v.reasons[0]


def test_unfinished_requests_are_saturation():
    records, window = open_run(120)
    for r in records[-5:]:
        r.chunk_t_ns, r.chunk_tokens, r.error_kind = [], [], "cancelled"
    v = judge(records, window)
    assert v.status == "SATURATED"
    assert "5 requests were still unfinished at the end" in v.reasons[0]
    assert not any("failed" in r for r in v.reasons)  # a queue's unfinished requests did not fail: no error bound


def test_requests_a_signal_cut_short_are_neither_failures_nor_saturation():
    """Ctrl-C at 60 s of a 150 s window: 120 ended, 1 was in flight, 179 were never sent (all `cancelled`)."""
    records, window = open_run(300)
    stop_ns = records[120].t_sched_ns + 100 * MS  # after its first chunk (at 50 ms)
    for r in records[120:]:
        in_flight = r.idx == 120
        r.chunk_t_ns, r.chunk_tokens, r.error_kind = r.chunk_t_ns[:1] if in_flight else [], [1] if in_flight else [], "cancelled"
        r.t_send_ns = r.t_send_ns if in_flight else None
    cut = (window[0], stop_ns)
    s = summarize(records, mode="open", slos=SLOs(ttft_ms=500), window_ns=cut, offered_rps=2.0, stopped=True)
    assert (s.n_requests, s.n_ok, s.n_errors, s.errors_by_kind) == (120, 120, 0, {})
    assert s.saturation_signals.n_unfinished == 0
    assert s.window_s == pytest.approx(60.1) and s.requests_per_s == pytest.approx(120 / 60.1)
    assert round(s.output_tokens_per_s * s.window_s) == 120 * 10 + 1  # the in-flight request's chunk still counts
    assert verdict(s, mode="open") == Verdict("VALID")  # bench adds "interrupted" first, and INVALID
    # without `stopped`, the same records read as a failed, saturated run: what an interrupted run used to say
    v = judge(records, window)
    assert v.status == "FAILED" and "Most requests failed" in v.reasons[0] and "saturated" in v.reasons[1]


def test_lagging_load_generator_is_invalid_even_when_saturated():
    v = judge(*open_run(120, service_ms=1000.0, lag_ms=80.0))
    assert v.status == "INVALID"
    assert any("saturated at" in r for r in v.reasons) and any("load generator fell behind" in r for r in v.reasons)


def test_every_request_failing_is_failed_not_saturated():
    """A server that refuses every request at once: the queue never grew, so it is FAILED, errors first."""
    records, window = open_run(120, fail=set(range(120)))
    for r in records:
        r.t_end_ns = r.t_send_ns + 2_000_000  # each failed 2 ms after it was sent
    v = judge(records, window)
    assert v.status == "FAILED"
    assert v.reasons[0].startswith("Most requests failed: 120 of 120 measured requests (http_5xx x120)")
    assert not any("saturated" in r for r in v.reasons)


def test_more_than_half_failing_is_failed_even_when_the_queue_also_grew():
    records, window = open_run(120, service_ms=1000.0, fail=set(range(0, 120, 3)) | set(range(1, 120, 3)))
    v = judge(records, window)
    assert v.status == "FAILED" and v.reasons[0].startswith("Most requests failed")


def test_saturated_only_when_the_run_held_its_error_bound():
    """Issue 40: a run with 25% timeouts was SATURATED, exit 0. Errors over their bound make it INVALID."""
    records, window = open_run(120, service_ms=1000.0, fail={5})  # 1 of 120: within the 1% bound
    v = judge(records, window)
    assert v.status == "SATURATED" and "saturated at" in v.reasons[0]
    records, window = open_run(120, service_ms=1000.0, fail={5, 50})  # 2 of 120: over it
    v = judge(records, window)
    assert v.status == "INVALID"
    assert v.reasons[0].startswith("1.7% of measured requests failed (2 of 120: http_5xx x2), over the 1.0% bound")
    assert "saturated at" in v.reasons[1]  # what it also showed, after what made it INVALID


def _summary(*, errors: bool, n_small: bool, saturated: bool, lag: bool, most_failed: bool = False) -> RunSummary:
    """An open-loop summary with exactly the named problems (each one alone gives its reason)."""
    n_ok = 50 if n_small else 200
    n_failed = n_ok + 10 if most_failed else (5 if errors else 0)  # 5 of 205 = 2.4%; 5 of 55 = 9.1%
    n = n_ok + n_failed
    signals = SaturationSignals(arrival_rps=10.0, completed_rps=5.0 if saturated else 10.0, ttft_sched_p50_first_third_ms=50.0,
                                ttft_sched_p50_last_third_ms=50.0, n_unfinished=0, ended_rps=5.0 if saturated else 10.0)
    lag_check = LagCheck(limit_ms=5.0, n=n, n_late=n if lag else 0, critical=4, ok=not lag)
    return RunSummary(n_requests=n, n_ok=n_ok, n_errors=n_failed, error_rate=n_failed / n,
                      errors_by_kind={"timeout": n_failed} if n_failed else {}, mode="open", offered_rps=10.0,
                      saturation_signals=signals, lag_check=lag_check)


COMBINATIONS = list(itertools.product((False, True), repeat=4))


@pytest.mark.parametrize(("errors", "n_small", "saturated", "lag"), COMBINATIONS)
def test_every_combination_of_reasons_gets_the_documented_status(errors, n_small, saturated, lag):
    """docs/metrics.md: errors over the bound, too few requests or send lag: INVALID whatever else; then SATURATED."""
    v = verdict(_summary(errors=errors, n_small=n_small, saturated=saturated, lag=lag), mode="open")
    expected = "INVALID" if errors or n_small or lag else "SATURATED" if saturated else "VALID"
    assert v.status == expected, v.reasons
    said = {"errors": any("of measured requests failed" in r for r in v.reasons),
            "n_small": any(r.startswith("n too small for p95") for r in v.reasons),
            "saturated": any("saturated at" in r for r in v.reasons),
            "lag": any("load generator fell behind" in r for r in v.reasons)}
    assert said == {"errors": errors, "n_small": n_small, "saturated": saturated, "lag": lag}  # every reason, no other
    if expected == "SATURATED":
        assert v.reasons[0].startswith("The run saturated")


@pytest.mark.parametrize(("errors", "n_small", "saturated", "lag"), COMBINATIONS)
def test_most_requests_failing_is_failed_whatever_else(errors, n_small, saturated, lag):
    v = verdict(_summary(errors=errors, n_small=n_small, saturated=saturated, lag=lag, most_failed=True), mode="open")
    assert v.status == "FAILED" and v.reasons[0].startswith("Most requests failed")


def test_closed_loop_skips_the_open_loop_checks():
    records, _ = open_run(120, lag_ms=50.0, service_ms=1000.0)
    assert judge(records, None, mode="closed", offered_rps=None).status == "VALID"


def test_no_measured_requests():
    v = judge([], (0, 1_000_000_000))
    assert v.status == "INVALID" and "No measured request" in v.reasons[0]


def test_mode_must_match_the_summary():
    s = summarize([], mode="offline", slos=SLOs(), window_ns=None)
    with pytest.raises(ValueError, match="differs"):
        verdict(s, mode="open")


def test_round_trip_through_json():
    v = judge(*open_run(50, fail={1}))
    assert Verdict.from_dict(json.loads(json.dumps(v.to_dict()))) == v
    with pytest.raises(ValueError, match="status"):
        Verdict.from_dict({"status": "OK", "reasons": []})
