"""The metric registry: each per-request metric declared once, and every reader takes it from there."""

from __future__ import annotations

import pkgutil

import pytest

from advisor.loadgen.records import RequestRecord
from advisor.metrics import defs
from advisor.metrics import per_request as pr
from advisor.metrics.registry import HEADLINE, METRIC_BY_KEY, METRICS
from advisor.metrics.summary import RunSummary, summarize
from advisor.repeats.group import FIGURE_BY_KEY
from scenarios.types import SLOs


def _rec(i: int, chunks: list[tuple[int, int]], send: int = 1_000_000) -> RequestRecord:
    return RequestRecord(idx=i, request_id=str(i), t_sched_ns=0, t_send_ns=send, chunk_t_ns=[t for t, _ in chunks],
                         chunk_tokens=[n for _, n in chunks], t_end_ns=chunks[-1][0] if chunks else send,
                         n_out=sum(n for _, n in chunks), n_in=10, n_in_client=10, max_tokens=8)


def test_the_registry_is_the_defs_modules_one_metric_each_in_order():
    modules = sorted(m.name for m in pkgutil.iter_modules(defs.__path__))
    assert sorted(m.key for m in METRICS) == modules  # each module's METRIC is keyed by its file name
    assert [m.order for m in METRICS] == sorted({m.order for m in METRICS})  # distinct, and the registry's order
    assert [m.key for m in HEADLINE] == ["ttft_ms", "tpot_ms"]  # the short views' TTFT and TPOT, said by the registry


def test_the_summary_holds_one_distribution_per_metric_under_its_key():
    ms = 1_000_000
    recs = [_rec(i, [(3 * ms, 1), ((5 + i) * ms, 1)]) for i in range(5)]
    s = summarize(recs, mode="open", slos=SLOs(), window_ns=(0, 1_000_000_000))
    assert list(s.distributions) == [m.key for m in METRICS]
    d = s.to_dict()
    assert "distributions" not in d and all(d[m.key] == s.distributions[m.key].to_dict() for m in METRICS)
    assert RunSummary.from_dict(d) == s
    assert s.ttft_ms is s.distributions["ttft_ms"]  # read by name
    with pytest.raises(AttributeError):
        _ = s.ttft_p95


def test_which_tail_is_worst_follows_better():
    lower, higher = METRIC_BY_KEY["ttft_ms"], METRIC_BY_KEY["e2e_output_tps"]
    assert [lower.tail(p) for p in (90, 95, 99)] == [90, 95, 99]
    assert [higher.tail(p) for p in (90, 95, 99)] == [10, 5, 1]


def test_compare_figures_come_from_the_registry_percentiles():
    for m in METRICS:
        for p in m.percentiles:
            f = FIGURE_BY_KEY[m.figure_key(p)]
            assert (f.metric, f.percentile, f.better, f.unit) == (m.key, p, m.better, m.unit)
    assert {"ttft_p95_ms", "ttst_p50_ms", "e2e_output_p10_tps"} <= set(FIGURE_BY_KEY)


def test_time_to_second_token():
    ms = 1_000_000
    assert pr.ttst_ms(_rec(0, [(0, 0), (3 * ms, 1), (5 * ms, 1), (9 * ms, 1)])) == 4.0  # role chunk, then 1 + 1
    assert pr.ttst_ms(_rec(1, [(3 * ms, 3), (5 * ms, 1)])) == 2.0  # the first chunk held two or more: its time
    assert pr.ttst_ms(_rec(2, [(3 * ms, 1)])) is None  # one token: no second
    assert pr.ttst_ms(RequestRecord(idx=3, request_id="3", t_sched_ns=0)) is None  # never sent


def test_a_registered_metric_reaches_the_summary_and_old_summaries_read_it_empty():
    ms = 1_000_000
    recs = [_rec(i, [(3 * ms, 1), ((5 + i) * ms, 1)]) for i in range(5)]
    s = summarize(recs, mode="open", slos=SLOs(), window_ns=(0, 1_000_000_000))
    assert s.ttst_ms.n == 5 and s.ttst_ms.p50 == 6.0  # 4 + 2 ms after the send at 1 ms
    assert METRIC_BY_KEY["ttst_ms"].values(recs[0]) == (4.0,)
    d = s.to_dict()
    d.pop("ttst_ms")
    old = RunSummary.from_dict(d)
    assert old.recorded("ttst_ms") is None and old.ttst_ms.n == 0  # not recorded (read by name: empty)
    assert "ttst_ms" not in old.to_dict()
    assert RunSummary.from_dict({**d, "ttst_ms": None}).recorded("ttst_ms") is None  # null: not recorded either
