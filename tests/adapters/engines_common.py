"""Helpers shared by the in-process CPU-engine adapter tests (llama_cpp, onnxruntime, openvino)."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

import adapters
from adapters.base import EngineInfo, EngineUnavailable, RequestSpec
from adapters.formats import oracle
from tests.adapters.formats.models import tiny_model


def assert_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, adapter: str, module: str,
                                           extra: str) -> None:
    """Creating `adapter` without its engine's `module` fails with a message naming the pip extra."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == module else real(n, *a))
    with pytest.raises(EngineUnavailable, match=rf"{module}.*pip install -e '\.\[{extra}\]'"):
        adapters.create(adapter, "tiny")


def assert_bad_option_refused(adapter: str, module: str, match: str, **options: object) -> None:
    """A bad constructor option fails at once with a ValueError that names it (skipped without the engine)."""
    pytest.importorskip(module)
    with pytest.raises(ValueError, match=match):
        adapters.create(adapter, "tiny", **options)


def started_on_tiny_model(adapter: str, module: str, **options: object) -> Iterator[tuple[Any, EngineInfo]]:
    """Body of a module fixture: the adapter started on the tiny model; closed afterwards."""
    pytest.importorskip(module)
    a = adapters.create(adapter, str(tiny_model()), **options)
    info = a.start()
    yield a, info
    a.close()


def chunk_times(a: Any, reqs: list[RequestSpec]) -> list[list[int]]:
    """Run `reqs` concurrently; each one's chunk timestamps, the engine's own where it gives them.

    The client stamps everything one read of the engine's channel brings with one time, so the order
    of work inside the engine is told by the engine's stamps.
    """
    async def one(r: RequestSpec) -> list[int]:
        return [c.t_engine_ns if c.t_engine_ns is not None else c.t_ns async for c in a.stream(r)]

    async def go() -> list[list[int]]:
        return await asyncio.gather(*[one(r) for r in reqs])

    return asyncio.run(go())


def output_ids(a: Any, reqs: list[RequestSpec]) -> list[list[int]]:
    """Run `reqs` concurrently; each one's output token ids, as its chunks carried them."""
    async def one(r: RequestSpec) -> list[int]:
        return [t async for c in a.stream(r) for t in (c.token_ids or ())]

    async def go() -> list[list[int]]:
        return await asyncio.gather(*[one(r) for r in reqs])

    return asyncio.run(go())


def assert_greedy_is_the_reference(a: Any, prompts: list[list[int]], max_tokens: int) -> None:
    """Greedy outputs of `prompts`, run concurrently, are exactly the reference model's."""
    outs = output_ids(a, [RequestSpec(f"ref{j}", tuple(p), max_tokens=max_tokens) for j, p in enumerate(prompts)])
    for j, (p, out) in enumerate(zip(prompts, outs, strict=True)):
        assert out == oracle.greedy(tiny_model(), p, max_tokens), j


def long_then_late(a: Any, long_tokens: int) -> tuple[list[int], list[int]]:
    """Chunk timestamps of a long request and of a 3-token one sent once the long one has streamed 5 chunks."""
    async def go() -> tuple[list[int], list[int]]:
        long_t: list[int] = []
        late_t: list[int] = []

        async def run(rid: str, n: int, sink: list[int]) -> None:
            async for c in a.stream(RequestSpec(rid, (5, 6, 7, 8), max_tokens=n)):
                sink.append(c.t_ns)

        first = asyncio.create_task(run("long", long_tokens, long_t))
        while len(long_t) < 5:
            await asyncio.sleep(0.001)
        await run("late", 3, late_t)
        await first
        return long_t, late_t

    return asyncio.run(go())
