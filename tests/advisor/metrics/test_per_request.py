"""Per-request metrics on handmade records, every number computed by hand."""

from __future__ import annotations

import pytest

from advisor.metrics import (
    client_queue_ms,
    e2e_ms,
    e2e_sched_ms,
    interactivity_tps,
    itl_ms,
    meets_slos,
    ntpot_ms,
    tpot_ms,
    tpot_n_minus_1_ms,
    ttft_ms,
    ttft_sched_ms,
)
from scenarios.types import SLOs
from tests.advisor.metrics.make import rec

approx = pytest.approx


def test_single_token_chunks_and_one_double_chunk():
    # scheduled 0, sent 2 ms late; tokens at 10, 15 and two at 27 ms
    r = rec(0, 2, [(10, 1), (15, 1), (27, 2)])
    assert client_queue_ms(r) == approx(2.0)
    assert ttft_ms(r) == approx(8.0)
    assert ttft_sched_ms(r) == approx(10.0)
    assert e2e_ms(r) == approx(25.0)
    assert e2e_sched_ms(r) == approx(27.0)
    assert tpot_ms(r) == approx(17.0 / 3)  # (27 - 10) / (4 - 1)
    assert ntpot_ms(r) == approx(25.0 / 4)
    assert interactivity_tps(r) == approx(3000.0 / 17)
    # the 12 ms gap to the 2-token chunk is split evenly over its tokens
    assert itl_ms(r) == approx([5.0, 6.0, 6.0])
    assert sum(itl_ms(r)) == approx(27 - 10)  # ITL sums to t_last - t_first


def test_first_chunk_with_several_tokens_has_no_itl():
    r = rec(0, 0, [(20, 3), (30, 1), (54, 2)])
    assert ttft_ms(r) == approx(20.0)
    assert tpot_ms(r) == approx(34.0 / 3)  # (54 - 20) / (6 - 3): the first chunk's 3 tokens are not free
    assert tpot_n_minus_1_ms(r) == approx(34.0 / 5)  # (54 - 20) / (6 - 1): other tools' form, kept beside it
    assert ntpot_ms(r) == approx(9.0)  # 54 / 6
    assert interactivity_tps(r) == approx(3000.0 / 34)  # 1000 / TPOT
    assert itl_ms(r) == approx([10.0, 12.0, 12.0])  # 3 values for the 3 tokens after the first chunk
    assert sum(itl_ms(r)) / len(itl_ms(r)) == approx(tpot_ms(r))  # per request, mean ITL is TPOT


def test_tpot_of_k_tokens_per_chunk_is_the_per_token_gap():
    # a server writing 4 tokens every 32 ms (8 ms per token), 64 tokens: TPOT is 8 ms, not 8 x 60/63
    r = rec(0, 0, [(40 + 32 * i, 4) for i in range(16)])
    assert tpot_ms(r) == approx(8.0)
    assert tpot_n_minus_1_ms(r) == approx(8.0 * 60 / 63)
    assert sum(itl_ms(r)) / len(itl_ms(r)) == approx(8.0)


def test_every_token_in_the_first_chunk_has_no_tpot():
    r = rec(0, 0, [(20, 5)])
    assert tpot_ms(r) is None and interactivity_tps(r) is None
    assert tpot_n_minus_1_ms(r) == approx(0.0)  # the (n_out - 1) form calls it infinitely fast
    assert meets_slos(r, SLOs(tpot_ms=1))


def test_tpot_uses_the_engine_count_not_the_chunks():
    # the server said 5 tokens while only 3 chunks of 1 were streamed (e.g. batched usage)
    r = rec(0, 0, [(10, 1), (20, 1), (30, 1)], n_out=5)
    assert tpot_ms(r) == approx(5.0)  # (30 - 10) / (5 - 1)
    assert ntpot_ms(r) == approx(6.0)


def test_single_token_has_no_tpot_itl_or_interactivity():
    r = rec(0, 1, [(11, 1)])
    assert ttft_ms(r) == approx(10.0)
    assert e2e_ms(r) == approx(10.0)
    assert tpot_ms(r) is None and tpot_n_minus_1_ms(r) is None
    assert interactivity_tps(r) is None
    assert itl_ms(r) == []
    assert ntpot_ms(r) == approx(10.0)


def test_chunks_without_tokens_are_ignored():
    # a role chunk before the first token and a usage-only chunk after the last one
    r = rec(0, 0, [(5, 0), (10, 1), (20, 1), (21, 0)])
    assert ttft_ms(r) == approx(10.0)
    assert e2e_ms(r) == approx(20.0)
    assert itl_ms(r) == approx([10.0])


def test_never_sent_request_has_no_metrics():
    r = rec(0, None, [], error_kind="cancelled")
    assert all(f(r) is None for f in (client_queue_ms, ttft_ms, ttft_sched_ms, e2e_ms, tpot_ms, ntpot_ms))
    assert itl_ms(r) == []


def test_meets_slos():
    r = rec(0, 0, [(100, 1), (300, 1), (500, 1)])  # TTFT 100, TPOT 200, E2E 500
    assert meets_slos(r, SLOs(ttft_ms=100, tpot_ms=200, e2e_ms=500))  # limits are inclusive
    assert not meets_slos(r, SLOs(ttft_ms=99))
    assert not meets_slos(r, SLOs(tpot_ms=199))
    assert not meets_slos(r, SLOs(e2e_ms=499))
    assert meets_slos(r, SLOs())
    assert meets_slos(rec(0, 0, [(100, 1)]), SLOs(tpot_ms=1))  # no TPOT: cannot break the TPOT limit
    assert not meets_slos(rec(0, 0, [(100, 1), (110, 1)], error_kind="stream"), SLOs())  # failed: never good
