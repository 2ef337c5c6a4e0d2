"""The openai-rerank adapter against a real HTTP server on loopback, and a rerank run end to end."""

from __future__ import annotations

import asyncio

import pytest

from adapters import embedders
from adapters.embed_base import EmbedRequest
from advisor.embed.bench import EmbedInputError, run_embed
from scenarios.overrides import Overrides
from tests.adapters.embed_server import embeddings_server


def test_scores_come_back_in_the_passages_order_with_the_servers_tokens() -> None:
    passages = ("a glad father", "the wise son and the glad father", "nothing here")
    with embeddings_server() as url:
        a = embedders.create("openai-rerank", None, {"url": url})
        info = a.start()
        res = asyncio.run(a.embed(EmbedRequest("r", passages, return_vectors=True, query="wise son glad father")))
        a.close()
    assert info.extra["task"] == "rerank" and info.extra["endpoint"] == "/v1/rerank"
    assert res.scores == (2.0, 4.0, 0.0)  # the server answered best first; put back in the passages' order
    assert res.n_inputs == 3 and res.n_tokens == 4 * 3 + 3 + 7 + 2


def test_a_run_reports_passages_per_second_and_their_price() -> None:
    with embeddings_server() as url:
        run = run_embed("rerank", "openai-rerank", "m", {"url": url}, Overrides(rate_rps=20, duration_s=2,
                        warmup_s=0.2), usd_per_hour=3.6, out_root=None)
    s = run.summary
    assert s.task == "rerank" and s.n_ok == s.n_requests >= 20 and not s.errors_by_kind
    assert s.inputs_per_s == pytest.approx(50 * s.requests_per_s)  # 50 passages a request
    assert s.usd_per_million_inputs == pytest.approx(0.001 / s.inputs_per_s * 1e6)  # $3.6/h = $0.001/s
    assert s.tokens_per_input == pytest.approx(12 + 96)  # query + passage words, as this server counts


@pytest.mark.parametrize(("scenario", "engine", "fix"), [("rerank", "openai-embed", "choose sentence-transformers-rerank or openai-rerank"),
                                                         ("embed-query", "openai-rerank", "choose sentence-transformers "
                                                                                          "or openai-embed")])
def test_an_engine_for_the_other_task_is_refused_before_it_starts(scenario: str, engine: str, fix: str) -> None:
    with pytest.raises(EmbedInputError, match=fix) as e:
        run_embed(scenario, engine, "m", {"url": "http://127.0.0.1:1"}, out_root=None)  # nothing listens there
    assert "\n" not in str(e.value)
