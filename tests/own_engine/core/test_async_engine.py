"""The asynchronous front: concurrent requests share engine steps, errors reach the caller, cancel frees the slot."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from own_engine.core.async_engine import AsyncLLMEngine, EngineDead
from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine, RequestRefused
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.static_engine import StaticBatchEngine
from own_engine.model import reference

PROMPTS = [[5, 6, 7], list(range(40, 60)), [9], [300, 301, 302, 303]]


async def _collect(front: AsyncLLMEngine, prompt: list[int], params: SamplingParams) -> list[tuple[int, list[int]]]:
    return [item async for item in front.generate(prompt, params)]


@pytest.mark.parametrize("build", [lambda path: LLMEngine(EngineConfig(path, device="cpu")),
                                   lambda path: StaticBatchEngine(path, device="cpu")], ids=["LLMEngine", "StaticBatchEngine"])
def test_concurrent_requests_are_batched_and_stream_in_order(tiny_path, build) -> None:
    engine = build(tiny_path)
    front = AsyncLLMEngine(engine)
    params = SamplingParams(max_tokens=8, ignore_eos=True)

    async def main():
        t0 = time.perf_counter_ns()
        res = await asyncio.gather(*[_collect(front, p, params) for p in PROMPTS])
        return t0, res

    try:
        t0, results = asyncio.run(main())
    finally:
        front.close()
    for prompt, chunks in zip(PROMPTS, results, strict=True):
        ids = [t for _, toks in chunks for t in toks]
        assert ids == reference.greedy(tiny_path, prompt, 8)
        stamps = [t for t, _ in chunks]
        assert stamps == sorted(stamps) and stamps[0] > t0  # engine-side timestamps, in order
    # 4 requests x 8 tokens in far fewer than 32 steps: they ran in shared steps
    assert engine.max_batch_seen >= 2
    assert engine.num_steps < 32


def test_refused_request_raises_in_its_coroutine_and_others_go_on(tiny_path) -> None:
    front = AsyncLLMEngine(LLMEngine(EngineConfig(tiny_path, device="cpu", max_model_len=32)))

    async def main():
        return await asyncio.gather(_collect(front, list(range(3, 40)), SamplingParams(max_tokens=4)),
                                    _collect(front, [5, 6], SamplingParams(max_tokens=4, ignore_eos=True)),
                                    return_exceptions=True)

    try:
        bad, good = asyncio.run(main())
    finally:
        front.close()
    assert isinstance(bad, RequestRefused)
    assert sum(len(toks) for _, toks in good) == 4


def test_engine_failure_propagates_instead_of_hanging(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu"))

    def broken_step():
        raise RuntimeError("boom")

    engine.step = broken_step
    front = AsyncLLMEngine(engine)

    async def main():
        return await asyncio.wait_for(
            asyncio.gather(*[_collect(front, [5, 6], SamplingParams(max_tokens=4)) for _ in range(3)],
                           return_exceptions=True), timeout=10)

    try:
        results = asyncio.run(main())
    finally:
        front.close()
    assert all(isinstance(r, RuntimeError) and "boom" in str(r) for r in results)

    async def after():
        return await _collect(front, [5], SamplingParams(max_tokens=1))

    with pytest.raises(EngineDead):
        asyncio.run(after())


def test_cancelled_request_is_aborted_and_frees_its_blocks(tiny_path) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu"))
    front = AsyncLLMEngine(engine)

    async def main():
        agen = front.generate([5, 6, 7], SamplingParams(max_tokens=2000, ignore_eos=True))
        await agen.__anext__()
        await agen.aclose()  # the client goes away after the first token
        for _ in range(200):
            if not engine.has_unfinished():
                break
            await asyncio.sleep(0.01)

    try:
        asyncio.run(main())
    finally:
        front.close()
    assert not engine.has_unfinished()
    assert engine.block_manager.num_used == 0


def test_close_fails_running_requests_instead_of_hanging(tiny_path) -> None:
    front = AsyncLLMEngine(LLMEngine(EngineConfig(tiny_path, device="cpu")))

    async def main():
        task = asyncio.ensure_future(_collect(front, [5, 6], SamplingParams(max_tokens=4000, ignore_eos=True)))
        await asyncio.sleep(0.05)
        await asyncio.get_running_loop().run_in_executor(None, front.close)
        return await asyncio.wait_for(task, timeout=10)

    with pytest.raises(EngineDead):
        asyncio.run(main())


def test_factory_builds_the_engine_on_the_thread_that_steps_it(tiny_path) -> None:
    built_on: list[threading.Thread] = []

    def build() -> LLMEngine:
        built_on.append(threading.current_thread())
        return LLMEngine(EngineConfig(tiny_path, device="cpu", threads=1, max_model_len=32))

    front = AsyncLLMEngine(factory=build)
    try:
        chunks = asyncio.run(_collect(front, [5, 6, 7], SamplingParams(max_tokens=6, ignore_eos=True)))
    finally:
        front.close()
    assert built_on == [front._thread] and front._thread is not threading.current_thread()
    assert [t for _, toks in chunks for t in toks] == reference.greedy(tiny_path, [5, 6, 7], 6)
    assert front.engine.describe()["threads"] == 1  # the building thread's count, read from any thread


def test_factory_error_reaches_the_caller(tiny_path) -> None:
    def build() -> LLMEngine:
        raise ValueError("no model at /nowhere")

    with pytest.raises(ValueError, match="no model at /nowhere"):
        AsyncLLMEngine(factory=build)
    with pytest.raises(TypeError, match="an engine or a factory"):
        AsyncLLMEngine(LLMEngine(EngineConfig(tiny_path, device="cpu", max_model_len=32)), factory=build)
