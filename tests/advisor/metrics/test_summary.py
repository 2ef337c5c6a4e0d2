"""summarize(): which requests and tokens count, window arithmetic, goodput, errors, tokens, JSON."""

from __future__ import annotations

import json

import pytest

from advisor.metrics import RunSummary, summarize
from scenarios.types import SLOs
from tests.advisor.metrics.make import MS, rec

approx = pytest.approx
WINDOW = (1000 * MS, 3000 * MS)  # open loop: a 2 s window from 1 s to 3 s
SCHEMA_KEYS = {
    "n_requests", "n_ok", "n_errors", "error_rate", "errors_by_kind", "window_s", "mode", "offered_rps",
    "ttft_ms", "ttft_sched_ms", "e2e_ms", "e2e_sched_ms", "tpot_ms", "ntpot_ms", "itl_ms", "client_queue_ms",
    "interactivity_tps", "requests_per_s", "input_tokens_per_s", "output_tokens_per_s", "total_tokens_per_s",
    "peak_output_tokens_per_s", "goodput_rps", "slo_attainment", "slo_met", "slo_margin", "n_in_total",
    "n_out_total", "n_out_client_total", "token_count_mismatch", "n_out_short",
}


def open_records():
    return [
        # warm-up: 1 token before the window, 2 inside it; not a measured request
        rec(500, 500, [(900, 1), (1200, 2)], n_in=10, warmup=True, idx=0),
        # TTFT 100, TPOT 200, E2E 500; done inside the window
        rec(1000, 1000, [(1100, 1), (1300, 1), (1500, 1)], n_in=20, n_out_client=3, max_tokens=3, idx=1),
        # sent 1 ms late; TTFT 199, TPOT 1000/3; its last token arrives after the window
        rec(2000, 2001, [(2200, 1), (2900, 2), (3200, 1)], n_in=30, n_out_client=5, max_tokens=5, idx=2),
        # fails after one streamed token (the token was real work inside the window)
        rec(2500, 2500, [(2600, 1)], n_in=5, error_kind="http_5xx", idx=3),
        rec(2600, 2600, [], n_in=7, error_kind="timeout", idx=4),
    ]


@pytest.fixture
def summary() -> RunSummary:
    slos = SLOs(ttft_ms=150, tpot_ms=300, percentile=50)
    return summarize(open_records(), mode="open", slos=slos, window_ns=WINDOW, offered_rps=2.0)


def test_counts_and_errors(summary):
    assert (summary.n_requests, summary.n_ok, summary.n_errors) == (4, 2, 2)
    assert summary.error_rate == approx(0.5)
    assert summary.errors_by_kind == {"http_5xx": 1, "timeout": 1}
    assert (summary.mode, summary.offered_rps, summary.window_s) == ("open", 2.0, approx(2.0))


def test_failed_and_warmup_requests_stay_out_of_latency_distributions(summary):
    assert summary.ttft_ms.n == 2 and summary.ttft_ms.mean == approx(149.5)  # (100 + 199) / 2
    assert summary.ttft_sched_ms.max == approx(200.0)
    assert summary.e2e_ms.max == approx(1199.0)
    assert summary.tpot_ms.n == 2 and summary.tpot_ms.max == approx(1000 / 3)
    assert summary.itl_ms.n == 5 and summary.itl_ms.max == approx(350.0)  # 200, 200 | 350, 350, 300
    assert summary.interactivity_tps.max == approx(5.0)  # 1000 / 200
    # the client queue measures the load generator: every sent measured request, failed ones too
    assert summary.client_queue_ms.n == 4 and summary.client_queue_ms.max == approx(1.0)


def test_throughput_counts_tokens_that_arrived_inside_the_window(summary):
    # output tokens inside [1 s, 3 s]: warm-up 2 (at 1.2 s), r1 3, r2 3 (its last one is at 3.2 s), r3 1
    assert summary.output_tokens_per_s == approx(9 / 2)
    # prompts count at their first token: r1 20 + r2 30 + r3 5 (the warm-up's first token was at 0.9 s)
    assert summary.input_tokens_per_s == approx(55 / 2)
    assert summary.total_tokens_per_s == approx(64 / 2)
    # measured requests completed inside the window: only r1 (r2 finished at 3.2 s)
    assert summary.requests_per_s == approx(1 / 2)
    # 1 s buckets: [1, 2) holds 2 + 3 tokens, [2, 3] holds 3 + 1
    assert summary.peak_output_tokens_per_s == approx(5.0)


def test_goodput_and_attainment_count_failures_as_not_good(summary):
    # r1 meets TTFT <= 150 and TPOT <= 300; r2's TTFT is 199; r3 and r4 failed
    assert summary.goodput_rps == approx(1 / 2)
    assert summary.slo_attainment == approx(1 / 4)
    # p50 of TTFT [100, 199] = 149.5 <= 150; p50 of TPOT [200, 333.3] = 266.7 <= 300
    assert summary.slo_met == {"ttft": True, "tpot": True, "e2e": None}
    assert summary.slo_margin["ttft_ms"] == approx(0.5)
    assert summary.slo_margin["tpot_ms"] == approx(300 - (200 + 1000 / 3) / 2)
    assert summary.slo_margin["e2e_ms"] is None


def test_goodput_counts_only_good_requests_that_finished_inside_the_window_as_throughput_does():
    """Goodput is a part of throughput, never more: a good request whose last token came after the window is out
    of both. Before 2026-11-27 it counted in goodput only, and the H200 chat run read goodput 5.55 req/s against a
    throughput of 5.18 (22 requests finished past the 60 s window)."""
    s = summarize(open_records(), mode="open", slos=SLOs(tpot_ms=400, percentile=50), window_ns=WINDOW)
    # r1 and r2 both meet TPOT <= 400 (no TTFT limit); r2's last token came at 3.2 s, after the window
    assert s.slo_attainment == approx(2 / 4)  # attainment is over every measured request, finished when it did
    assert s.requests_per_s == approx(1 / 2) and s.goodput_rps == approx(1 / 2)  # only r1 in both


def test_a_summary_saved_with_goodput_above_throughput_reads_as_at_most_throughput():
    """Summaries saved before 2026-11-27 (the H200 chat run: 5.55 against 5.18 req/s): a report, a cost or a
    `compare` against a new run must not show goodput above throughput, nor a goodput 'regression' that is only
    the definition."""
    old = RunSummary.from_dict({"mode": "open", "requests_per_s": 5.1833, "goodput_rps": 5.55})
    assert old.goodput_rps == approx(5.1833)
    kept = RunSummary.from_dict({"mode": "open", "requests_per_s": 5.1833, "goodput_rps": 2.0})
    assert kept.goodput_rps == 2.0 and RunSummary.from_dict({"mode": "open", "goodput_rps": 3.0}).goodput_rps == 3.0


def test_slo_missed_gives_negative_margin():
    s = summarize(open_records(), mode="open", slos=SLOs(ttft_ms=120, percentile=95), window_ns=WINDOW)
    assert s.slo_met["ttft"] is False
    assert s.slo_margin["ttft_ms"] == approx(120 - (100 + 0.95 * 99))


def test_token_accounting(summary):
    assert summary.n_in_total == 50 and summary.n_out_total == 7  # successful measured requests
    assert summary.n_out_client_total == 8
    assert summary.token_count_mismatch == -1  # 7 by the server, 8 by the client
    assert summary.n_out_short == 1  # r2 asked for 5 and got 4


def test_no_client_counts_gives_null_mismatch():
    s = summarize([rec(0, 0, [(10, 1), (20, 1)])], mode="offline", slos=SLOs(), window_ns=None)
    assert s.n_out_client_total is None and s.token_count_mismatch is None


def test_closed_loop_window_runs_from_first_send_to_last_token():
    records = [
        rec(0, 0, [(50, 1), (150, 1)], warmup=True),  # only its token at 150 ms is inside the window
        rec(100, 100, [(300, 1), (500, 1)]),
        rec(200, 200, [(400, 1), (1100, 1)]),
    ]
    s = summarize(records, mode="closed", slos=SLOs(), window_ns=None, offered_rps=3.0)
    assert s.window_s == approx(1.0)  # 100 ms .. 1100 ms
    assert s.offered_rps is None  # only open-loop runs have an offered rate
    assert s.output_tokens_per_s == approx(5.0)
    assert s.requests_per_s == approx(2.0)
    assert s.goodput_rps == approx(2.0) and s.slo_attainment == 1.0  # no SLOs: every success is good
    assert s.slo_met == {"ttft": None, "tpot": None, "e2e": None}


def test_nothing_measured():
    s = summarize([rec(0, 0, [(10, 1)], warmup=True)], mode="open", slos=SLOs(ttft_ms=1), window_ns=WINDOW)
    assert (s.n_requests, s.error_rate, s.slo_attainment, s.ttft_ms.n) == (0, None, None, 0)
    assert s.requests_per_s == 0.0 and s.goodput_rps == 0.0
    assert summarize([], mode="offline", slos=SLOs(), window_ns=None).window_s is None


def test_bad_arguments_name_the_fix():
    with pytest.raises(ValueError, match="window_ns"):
        summarize([], mode="open", slos=SLOs(), window_ns=None)
    with pytest.raises(ValueError, match="end after it starts"):
        summarize([], mode="open", slos=SLOs(), window_ns=(5, 5))
    with pytest.raises(ValueError, match="mode"):
        summarize([], mode="batch", slos=SLOs(), window_ns=None)  # type: ignore[arg-type]


def test_round_trip_through_json(summary):
    d = summary.to_dict()
    assert set(d) == SCHEMA_KEYS | {"saturation_signals", "lag_check", "token_sources", "sessions",
                                    "tpot_n_minus_1_ms", "tpot_definition", "ttst_ms", "e2e_output_tps"}
    text = json.dumps(d, allow_nan=False)
    back = RunSummary.from_dict(json.loads(text))
    assert back == summary
    assert back.to_dict() == d
    # a summary written without the verdict's inputs still loads
    del d["saturation_signals"]
    assert RunSummary.from_dict(d).saturation_signals is None
    with pytest.raises(ValueError, match="missing mode"):
        RunSummary.from_dict({"n_requests": 1})


def test_a_summary_from_before_the_two_tpot_forms_reads_its_tpot_as_the_n_minus_1_form():
    # a multi-token first chunk: TPOT (after the first chunk) 10 ms, the (n_out - 1) form 30/4 = 7.5 ms
    s = summarize([rec(0, 0, [(10, 2), (20, 1), (30, 1), (40, 1)], idx=i) for i in range(3)], mode="closed",
                  slos=SLOs(tpot_ms=9), window_ns=None)
    assert s.tpot_ms.p50 == approx(10.0) and s.tpot_n_minus_1_ms.p50 == approx(7.5)
    assert s.slo_met["tpot"] is False  # the SLO is judged on TPOT after the first chunk: 10 > 9
    old = s.to_dict()
    old["tpot_ms"] = old.pop("tpot_n_minus_1_ms")  # what the old advisor wrote under tpot_ms
    del old["tpot_definition"]
    back = RunSummary.from_dict(old)
    assert back.tpot_definition == "n_out_minus_1"
    assert back.tpot_ms.p50 == back.tpot_n_minus_1_ms.p50 == approx(7.5)
    assert RunSummary.from_dict(s.to_dict()).tpot_definition == "after_first_chunk"


def test_window_edges_are_inclusive_and_short_windows_have_a_peak():
    records = [rec(1000, 1000, [(1000, 1), (2000, 2), (3000, 4), (3001, 8)])]  # window is [1 s, 3 s]
    s = summarize(records, mode="open", slos=SLOs(), window_ns=WINDOW)
    assert s.output_tokens_per_s == approx(7 / 2)  # the 8 tokens 1 ms after the end do not count
    assert s.peak_output_tokens_per_s == approx(6.0)  # bucket [2 s, 3 s] includes the end point
    short = summarize(records, mode="open", slos=SLOs(), window_ns=(1000 * MS, 1500 * MS))
    assert short.peak_output_tokens_per_s == approx(2.0)  # 1 token in 0.5 s
