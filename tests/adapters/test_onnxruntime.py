"""The onnxruntime adapter: reference-exact greedy output, honest static batching, clean errors."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

import adapters
from adapters.base import AdapterError, EngineUnavailable, RequestSpec
from advisor.convert import reference
from tests.convert.models import tiny_model


def test_missing_package_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "onnxruntime_genai" else real(n, *a))
    with pytest.raises(EngineUnavailable, match=r"onnxruntime_genai.*pip install -e '\.\[onnx\]'"):
        adapters.create("onnxruntime", "tiny")


@pytest.fixture(scope="module")
def ort_adapter():
    pytest.importorskip("onnxruntime_genai")
    a = adapters.create("onnxruntime", str(tiny_model()), max_batch=4, max_length=512)
    info = a.start()
    a.keep_token_ids = True
    yield a, info
    a.close()


@pytest.mark.engines
def test_greedy_output_is_the_reference(ort_adapter):
    a, info = ort_adapter
    assert info.format == "onnx" and info.max_batch == 4 and info.max_model_len == 512
    prompt = [17 + 5 * i for i in range(14)]

    async def go() -> None:
        async for _ in a.stream(RequestSpec("ref", tuple(prompt), max_tokens=20)):
            pass

    asyncio.run(go())
    assert a.token_ids_of("ref") == reference.greedy(tiny_model(), prompt, 20)


@pytest.mark.engines
def test_static_batching_is_reported_and_real(ort_adapter):
    """A request arriving while a batch runs waits for it: exactly what EngineInfo.batching='static' says."""
    a, info = ort_adapter
    assert info.batching == "static" and any("static" in n for n in info.notes)

    async def go() -> tuple[list[int], list[int]]:
        long_t: list[int] = []
        late_t: list[int] = []

        async def run(rid: str, n: int, sink: list[int]) -> None:
            async for c in a.stream(RequestSpec(rid, (5, 6, 7, 8), max_tokens=n)):
                sink.append(c.t_ns)

        first = asyncio.create_task(run("long", 60, long_t))
        while len(long_t) < 5:
            await asyncio.sleep(0.001)
        await run("late", 3, late_t)
        await first
        return long_t, late_t

    long_t, late_t = asyncio.run(go())
    assert late_t[0] >= long_t[-1]


@pytest.mark.engines
def test_request_beyond_max_length_is_refused(ort_adapter):
    a, _ = ort_adapter

    async def go() -> None:
        async for _ in a.stream(RequestSpec("big", (5,) * 500, max_tokens=100)):
            pass

    with pytest.raises(AdapterError, match="max_length") as err:
        asyncio.run(go())
    assert err.value.kind == "refused"
