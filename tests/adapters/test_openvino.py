"""The openvino adapter: reference-exact greedy output, continuous batching, KV-cache precision, clean errors."""

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
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "openvino_genai" else real(n, *a))
    with pytest.raises(EngineUnavailable, match=r"openvino_genai.*pip install -e '\.\[openvino\]'"):
        adapters.create("openvino", "tiny")


def test_bad_options_are_refused_at_construction():
    pytest.importorskip("openvino_genai")
    with pytest.raises(ValueError, match="kv_cache_precision"):
        adapters.create("openvino", "tiny", kv_cache_precision="int3")


@pytest.fixture(scope="module")
def ov_adapter():
    pytest.importorskip("openvino_genai")
    a = adapters.create("openvino", str(tiny_model()), max_batch=4)
    info = a.start()
    a.keep_token_ids = True
    yield a, info
    a.close()


@pytest.mark.engines
def test_greedy_output_is_the_reference(ov_adapter):
    a, info = ov_adapter
    assert info.kv_cache_dtype == "f32" and info.format == "openvino-ir" and info.batching == "continuous"
    prompt = [17 + 5 * i for i in range(14)]

    async def go() -> None:
        async for _ in a.stream(RequestSpec("ref", tuple(prompt), max_tokens=20)):
            pass

    asyncio.run(go())
    assert a.token_ids_of("ref") == reference.greedy(tiny_model(), prompt, 20)


@pytest.mark.engines
def test_a_late_request_joins_the_running_batch(ov_adapter):
    a, _ = ov_adapter

    async def go() -> tuple[list[int], list[int]]:
        long_t: list[int] = []
        late_t: list[int] = []

        async def run(rid: str, n: int, sink: list[int]) -> None:
            async for c in a.stream(RequestSpec(rid, (5, 6, 7, 8), max_tokens=n)):
                sink.append(c.t_ns)

        first = asyncio.create_task(run("long", 1000, long_t))
        while len(long_t) < 5:
            await asyncio.sleep(0.001)
        await run("late", 3, late_t)
        await first
        return long_t, late_t

    long_t, late_t = asyncio.run(go())
    assert late_t[-1] < long_t[-1], "the late request waited for the running one: not continuous batching"
    assert a.stats()["kv_cache_usage_pct"] >= 0.0
