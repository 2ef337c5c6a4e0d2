"""The llama_cpp adapter: reference-exact greedy output, batched decode vs queueing, no prefix reuse, clean errors."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

import adapters
from adapters.base import EngineUnavailable, RequestSpec
from advisor.convert import reference
from tests.convert.models import tiny_model


def test_missing_package_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "llama_cpp" else real(n, *a))
    with pytest.raises(EngineUnavailable, match=r"llama_cpp.*pip install -e '\.\[llamacpp\]'"):
        adapters.create("llama_cpp", "tiny")


def test_bad_options_are_refused_at_construction():
    pytest.importorskip("llama_cpp")
    with pytest.raises(ValueError, match="parallel"):
        adapters.create("llama_cpp", "tiny", parallel=0)


def _timed(a, reqs: list[RequestSpec]) -> list[list[int]]:
    async def one(r: RequestSpec) -> list[int]:
        return [c.t_ns async for c in a.stream(r)]

    async def go() -> list[list[int]]:
        return await asyncio.gather(*[one(r) for r in reqs])

    return asyncio.run(go())


@pytest.fixture(scope="module")
def batched():
    pytest.importorskip("llama_cpp")
    a = adapters.create("llama_cpp", str(tiny_model()), parallel=4, n_ctx=512, kv_cache_precision="f32")
    info = a.start()
    a.keep_token_ids = True
    yield a, info
    a.close()


@pytest.mark.engines
def test_greedy_output_is_the_reference_alone_and_in_a_batch(batched):
    a, info = batched
    assert info.batching == "continuous" and info.max_batch == 4 and info.kv_cache_dtype == "f32"
    prompts = [[17 + 5 * i + j for i in range(10 + j)] for j in range(4)]
    _timed(a, [RequestSpec(f"b{j}", tuple(p), max_tokens=16) for j, p in enumerate(prompts)])
    for j, p in enumerate(prompts):
        assert a.token_ids_of(f"b{j}") == reference.greedy(tiny_model(), p, 16), j


@pytest.mark.engines
def test_same_prompt_twice_does_the_same_work(batched):
    """No silent prefix reuse: the KV cache is empty again after each request."""
    a, _ = batched
    spec = (40, 41, 42, 43, 44, 45)
    _timed(a, [RequestSpec("p1", spec, max_tokens=8)])
    assert a.stats()["kv_tokens_used"] == 0.0
    _timed(a, [RequestSpec("p2", spec, max_tokens=8)])
    assert a.token_ids_of("p1") == a.token_ids_of("p2")


@pytest.mark.engines
def test_parallel_one_queues_and_says_so():
    pytest.importorskip("llama_cpp")
    a = adapters.create("llama_cpp", str(tiny_model()), parallel=1, n_ctx=256)
    info = a.start()
    try:
        assert info.batching == "none" and any("queue" in n for n in info.notes)
        spans = sorted((t[0], t[-1]) for t in _timed(a, [RequestSpec(f"q{i}", (5, 6, 7), max_tokens=6)
                                                        for i in range(3)]))
        assert all(b[0] > a_[1] for a_, b in zip(spans, spans[1:], strict=False))
    finally:
        a.close()
