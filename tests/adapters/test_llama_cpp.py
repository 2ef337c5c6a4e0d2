"""The llama_cpp adapter: reference-exact greedy output, batched decode vs queueing, no prefix reuse, clean errors."""

from __future__ import annotations

import pytest

import adapters
from adapters.base import RequestSpec
from tests.adapters.engines_common import (
    assert_bad_option_refused,
    assert_greedy_is_the_reference,
    assert_missing_package_names_the_extra,
    chunk_times,
    output_ids,
    started_on_tiny_model,
)
from tests.adapters.formats.models import tiny_model


def test_missing_package_names_the_extra(monkeypatch):
    assert_missing_package_names_the_extra(monkeypatch, "llama_cpp", "llama_cpp", "llamacpp")


def test_bad_options_are_refused_at_construction():
    assert_bad_option_refused("llama_cpp", "llama_cpp", "max_batch", max_batch=0)


@pytest.fixture(scope="module")
def batched():
    yield from started_on_tiny_model("llama_cpp", "llama_cpp", max_batch=4, n_ctx=512, kv_cache_precision="f32")


@pytest.mark.engines
def test_greedy_output_is_the_reference_alone_and_in_a_batch(batched):
    a, info = batched
    assert info.batching == "continuous" and info.max_batch == 4 and info.kv_cache_dtype == "f32"
    assert_greedy_is_the_reference(a, [[17 + 5 * i + j for i in range(10 + j)] for j in range(4)], 16)


@pytest.mark.engines
def test_same_prompt_twice_does_the_same_work(batched):
    """No silent prefix reuse: the KV cache is empty again after each request."""
    a, _ = batched
    spec = (40, 41, 42, 43, 44, 45)
    [first] = output_ids(a, [RequestSpec("p1", spec, max_tokens=8)])
    assert a.stats()["kv_tokens_used"] == 0.0
    [second] = output_ids(a, [RequestSpec("p2", spec, max_tokens=8)])
    assert first == second


@pytest.mark.engines
def test_parallel_one_queues_and_says_so():
    pytest.importorskip("llama_cpp")
    a = adapters.create("llama_cpp", str(tiny_model()), max_batch=1, n_ctx=256)
    info = a.start()
    try:
        assert info.batching == "none" and any("queue" in n for n in info.notes)
        spans = sorted((t[0], t[-1]) for t in chunk_times(a, [RequestSpec(f"q{i}", (5, 6, 7), max_tokens=6)
                                                             for i in range(3)]))
        assert all(b[0] > a_[1] for a_, b in zip(spans, spans[1:], strict=False))
    finally:
        a.close()
