"""An embed run's summary from hand-made records: window, percentiles, rates, goodput, verdict, cost."""

from __future__ import annotations

import pytest

from advisor.embed.drive import EmbedRecord
from advisor.embed.metrics import summarise
from scenarios.catalog import scenario_from_dict
from scenarios.embed_schedule import build_embed_schedule

MS = 1_000_000


def _schedule(rate: float = 10.0, duration: float = 10.0, warmup: float = 1.0, e2e_ms: float = 50.0):
    sc = scenario_from_dict({"name": "e", "description": "an embedding scenario for the metrics tests",
                             "workload": {"task": "embed", "embed": {"inputs_per_request": 4, "chunk_words": 8}},
                             "arrival": {"process": "constant", "rate_rps": rate}, "duration_s": duration,
                             "warmup_s": warmup, "slos": {"e2e_ms": e2e_ms, "percentile": 95}})
    return build_embed_schedule(sc)


def _records(sch, latency_ms, lag_ms=0.0, tokens=40):
    out = []
    for i, r in enumerate(sch.requests):
        t = int(r.t_s * 1e9)
        lat = latency_ms(i) if callable(latency_ms) else latency_ms
        send = t + int(lag_ms * MS)
        out.append(EmbedRecord(i, r.warmup, 4, t, send, send + int(lat * MS), tokens, 384))
    return out


def test_rates_latency_goodput_and_cost() -> None:
    sch = _schedule()
    assert len(sch.requests) == 110 and len(sch.measured) == 100
    recs = _records(sch, lambda i: 30.0 if i % 10 else 80.0)  # every 10th request misses the 50 ms SLO
    s = summarise(sch, recs, usd_per_hour=36.0)
    assert s.verdict == "VALID" and s.window_s == pytest.approx(10.0)
    # measured requests answered inside [1 s, 11 s]: all 100
    assert s.requests_per_s == pytest.approx(10.0) and s.inputs_per_s == pytest.approx(40.0)
    assert s.tokens_per_s == pytest.approx(400.0) and s.tokens_per_input == pytest.approx(10.0)
    assert s.latency_ms.p50 == pytest.approx(30.0) and s.latency_ms.p99 == pytest.approx(80.0)
    assert s.goodput_rps == pytest.approx(9.0) and s.slo_attainment == pytest.approx(0.9)
    assert s.slo_met is False  # p95 is 80 ms > 50
    assert s.usd_per_million_tokens == pytest.approx(36.0 / 3600 / 400 * 1e6)  # $0.01/s over 400 tokens/s


def test_late_sends_make_the_run_invalid_and_slow_answers_saturated() -> None:
    sch = _schedule()
    late = summarise(sch, _records(sch, 10.0, lag_ms=20.0))
    assert late.verdict == "INVALID" and late.late_sends == 100 and "fell behind" in late.reasons[0]
    one = [r if r.index != 50 else EmbedRecord(r.index, r.warmup, 4, r.t_sched_ns, r.t_send_ns + 30 * MS,
                                                r.t_done_ns + 30 * MS, 40, 384) for r in _records(sch, 10.0)]
    assert summarise(sch, one).verdict == "VALID"  # 1 late of 100: what 1% late sends explain (binomial rule)
    slow = summarise(sch, _records(sch, lambda i: 10.0 if i < 60 else 5_000.0))
    assert slow.verdict == "SATURATED" and slow.unfinished > 10  # answered after the window's end
    tail = summarise(sch, _records(sch, lambda i: 10.0 if i < 105 else 5_000.0))
    assert tail.verdict == "VALID" and tail.unfinished == 5  # the last few past the end: not saturation


def test_errors_are_counted_and_no_success_is_failed() -> None:
    sch = _schedule()
    recs = [EmbedRecord(r.index, r.warmup, 4, r.t_sched_ns, r.t_send_ns, r.t_done_ns, error_kind="refused",
                        error="too long") for r in _records(sch, 10.0)]
    s = summarise(sch, recs)
    assert s.verdict == "FAILED" and s.errors_by_kind == {"refused": 100} and s.n_ok == 0
    assert s.tokens_per_s is None and s.requests_per_s == 0


def test_unreported_token_counts_leave_tokens_per_s_and_cost_unset() -> None:
    sch = _schedule()
    s = summarise(sch, _records(sch, 10.0, tokens=None), usd_per_hour=1.0)
    assert s.tokens_per_s is None and s.usd_per_million_tokens is None and s.inputs_per_s == pytest.approx(40.0)


def test_errors_past_their_bounds_and_too_small_a_sample_are_not_valid() -> None:
    sch = _schedule()
    recs = _records(sch, 10.0)
    broken = [EmbedRecord(r.index, r.warmup, 4, r.t_sched_ns, r.t_send_ns, r.t_done_ns, error_kind="connection",
                          error="refused") if r.index % 20 == 0 else r for r in recs]
    s = summarise(sch, broken)
    assert s.verdict == "INVALID" and "over the 1% bound" in s.reasons[0] and s.errors_by_kind == {"connection": 5}
    mostly = [EmbedRecord(r.index, r.warmup, 4, r.t_sched_ns, r.t_send_ns, r.t_done_ns, error_kind="connection",
                          error="refused") if r.index % 10 else r for r in recs]
    assert summarise(sch, mostly).verdict == "FAILED"  # 90% failed: it measured failures
    few = _schedule(rate=1.0)  # 10 measured requests
    s = summarise(few, _records(few, 10.0))
    assert s.verdict == "INVALID" and "too few for a p95" in s.reasons[0]
