"""The openai-embed adapter against a real HTTP server on loopback (tests/adapters/embed_server.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from adapters import embedders
from adapters.base import EngineUnavailable
from adapters.embed_base import EmbedRequest
from advisor.embed.bench import run_embed
from scenarios.overrides import Overrides
from tests.adapters.embed_server import embeddings_server


def test_vectors_in_input_order_and_the_servers_token_count() -> None:
    with embeddings_server() as url:
        a = embedders.create("openai-embed", None, {"url": url + "/v1"})
        info = a.start()
        assert info.model == "test-embedder" and info.ready_s is not None  # asked /v1/models
        res = asyncio.run(a.embed(EmbedRequest("r", ("one two", "three four five"), return_vectors=True)))
        a.close()
    assert res.n_inputs == 2 and res.n_tokens == 5 and res.dim == 3
    assert res.vectors == ((2.0, 7.0, 1.0), (3.0, 15.0, 1.0))  # the server sent them last-first


def test_a_server_without_the_endpoint_fails_the_warm_up_in_one_line() -> None:
    with embeddings_server(endpoint=False) as url:
        a = embedders.create("openai-embed", "m", {"url": url})
        with pytest.raises(EngineUnavailable, match="has no /v1/embeddings endpoint") as e:
            a.start()
    assert "\n" not in str(e.value)


def test_no_url_and_unknown_options_are_one_line_errors() -> None:
    with pytest.raises(EngineUnavailable, match="--url"):
        embedders.create("openai-embed", "m", {})
    with pytest.raises(ValueError, match="unknown option.*valid options"):
        embedders.create("openai-embed", "m", {"url": "http://127.0.0.1:1", "bogus": 1})
    with pytest.raises(EngineUnavailable, match="unknown embedding engine 'nope'; choose one of"):
        embedders.create("nope")


def test_a_run_against_the_server_is_measured_saved_and_valid(tmp_path) -> None:
    with embeddings_server() as url:
        run = run_embed("embed-query", "openai-embed", "m", {"url": url}, Overrides(rate_rps=40, duration_s=2,
                        warmup_s=0.5), usd_per_hour=3.6, out_root=tmp_path)
    s = run.summary
    assert s.n_ok == s.n_requests > 40 and not s.errors_by_kind
    # a shared CI machine may delay the client's sends; then, and only then, the run is not VALID
    assert s.verdict == "VALID" or (s.verdict == "INVALID" and "fell behind" in s.reasons[0])
    assert s.tokens_per_input == 12  # embed-query's 12-word chunks, one token a word on this server
    assert s.tokens_per_s == pytest.approx(s.inputs_per_s * 12)
    assert s.goodput_rps == pytest.approx(s.requests_per_s)  # loopback answers are far inside 50 ms
    # $3.6/h = $0.001/s; per 1M tokens at tokens_per_s
    assert s.usd_per_million_tokens == pytest.approx(0.001 / s.tokens_per_s * 1e6)
    saved = json.loads((run.path / "result.json").read_text())
    assert saved["task"] == "embed" and saved["summary"]["verdict"] == s.verdict
    assert len((run.path / "requests.jsonl").read_text().splitlines()) == len(run.records)


def test_without_usage_tokens_per_s_is_not_reported_never_guessed(tmp_path) -> None:
    with embeddings_server(usage="none") as url:
        run = run_embed("embed-query", "openai-embed", "m", {"url": url}, Overrides(rate_rps=20, duration_s=1,
                        warmup_s=0), usd_per_hour=1.0, out_root=None)
    assert run.summary.n_ok > 0 and run.summary.tokens_per_s is None and run.summary.usd_per_million_tokens is None


def test_a_server_counting_characters_is_caught_at_the_warm_up(tmp_path) -> None:
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel

    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))  # one token a word, no special tokens
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(tmp_path / "tokenizer.json"))
    texts = ("one two", "three four five")
    with embeddings_server(usage="chars") as url:
        plain = embedders.create("openai-embed", "m", {"url": url})
        assert "counts characters" in plain.start().notes[0]
        assert asyncio.run(plain.embed(EmbedRequest("r", texts))).n_tokens is None  # never the character count
        plain.close()
        counted = embedders.create("openai-embed", "m", {"url": url, "tokenizer": str(tmp_path)})
        counted.start()
        res = asyncio.run(counted.embed(EmbedRequest("r", texts)))
        counted.close()
    assert res.n_tokens == 5 and res.n_tokens_server == 22
