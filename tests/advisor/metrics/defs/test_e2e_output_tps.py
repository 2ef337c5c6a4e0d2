"""The E2E output rate per user: n_out over the whole request, higher is better, quoted at its p10."""

from __future__ import annotations

import pytest

from advisor.loadgen.records import RequestRecord
from advisor.metrics.defs.e2e_output_tps import METRIC, e2e_output_tps
from advisor.metrics.intervals import median_interval
from advisor.metrics.summary import summarize
from advisor.repeats.group import FIGURE_BY_KEY
from advisor_cli.compare import compare
from scenarios.types import SLOs

MS = 1_000_000


def _rec(i: int, send_ms: float, chunks_ms: list[float]) -> RequestRecord:
    return RequestRecord(idx=i, request_id=str(i), t_sched_ns=0, t_send_ns=int(send_ms * MS),
                         chunk_t_ns=[int(t * MS) for t in chunks_ms], chunk_tokens=[1] * len(chunks_ms),
                         t_end_ns=int(chunks_ms[-1] * MS) if chunks_ms else int(send_ms * MS),
                         n_out=len(chunks_ms), n_in=10, n_in_client=10, max_tokens=len(chunks_ms))


def test_it_is_output_tokens_over_the_whole_request_wait_included():
    # sent at 1 ms, first token at 401 ms (a long wait), 10 tokens by 501 ms: 10 / 0.5 s = 20 tok/s,
    # while interactivity (the rate once tokens flow) is 90 tok/s
    assert e2e_output_tps(_rec(0, 1, [401 + 100 / 9 * k for k in range(10)])) == pytest.approx(20.0)
    assert e2e_output_tps(RequestRecord(idx=1, request_id="1", t_sched_ns=0)) is None  # never sent
    assert e2e_output_tps(_rec(2, 1, [])) is None  # no output token


def test_its_headline_is_the_low_tail_and_lower_is_worse():
    # 20 requests of 10 tokens over 100 .. 290 ms: rates from 100 down to ~34 tok/s
    recs = [_rec(i, 0, [(100 + 10 * i) * (k + 1) / 10 for k in range(10)]) for i in range(20)]
    s = summarize(recs, mode="closed", slos=SLOs(), window_ns=None)
    d = s.distributions[METRIC.key]
    assert d.n == 20 and d.p10 is not None and d.p10 < d.p50 < d.p90  # p10: the slowest tenth of users
    fig = FIGURE_BY_KEY["e2e_output_p10_tps"]
    assert (fig.metric, fig.percentile, fig.better) == (METRIC.key, 10.0, "higher")
    a, b = {fig.key: median_interval([30.0])}, {fig.key: median_interval([24.0])}
    (diff,) = compare(a, b, max_regression_pct=10.0, keys=(fig.key,))
    assert diff.worse and diff.regression  # a lower rate for the slowest users is a regression
    (diff,) = compare(b, a, max_regression_pct=10.0, keys=(fig.key,))
    assert not diff.worse and diff.verdict() == "B better"
