"""A deterministic engine with known delays and no model, for tests and load-generator benchmarks.

`FakeAdapter(None, ttft_ms=20, tpot_ms=5, tokens_per_chunk=1)` streams exactly
`max_tokens` tokens: the first after `ttft_ms`, then one chunk every
`tpot_ms * tokens_per_chunk`. With all delays at 0 it is a zero-work engine
that measures the load generator itself. `fail_every=N` makes every N-th
request fail with an 'engine' error, `max_concurrency` queues requests beyond
it (a crude capacity model for saturation tests).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from typing import ClassVar

from adapters.base import AdapterError, Chunk, EngineInfo, RequestSpec


class FakeAdapter:
    name: ClassVar[str] = "fake"

    def __init__(self, model: str | None = None, *, ttft_ms: float = 0.0, tpot_ms: float = 0.0,
                 tokens_per_chunk: int = 1, fail_every: int = 0, max_concurrency: int = 0,
                 vocab_size: int = 32000) -> None:
        if ttft_ms < 0 or tpot_ms < 0:
            raise ValueError("fake adapter delays must be >= 0")
        if tokens_per_chunk < 1:
            raise ValueError("tokens_per_chunk must be >= 1")
        self.ttft_s = float(ttft_ms) / 1e3
        self.tpot_s = float(tpot_ms) / 1e3
        self.tokens_per_chunk = int(tokens_per_chunk)
        self.fail_every = int(fail_every)
        self.max_concurrency = int(max_concurrency)
        self.vocab_size = int(vocab_size)
        self._count = 0
        self._running = 0
        self._sem: asyncio.Semaphore | None = None

    def start(self) -> EngineInfo:
        return EngineInfo(adapter="fake", engine="fake", version="0", device="none", model="none",
                          format="none", precision="none", batching="continuous" if not self.max_concurrency else "static",
                          vocab_size=self.vocab_size, pid=os.getpid(),
                          extra={"ttft_ms": self.ttft_s * 1e3, "tpot_ms": self.tpot_s * 1e3,
                                 "tokens_per_chunk": self.tokens_per_chunk})

    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        self._count += 1
        if self.fail_every and self._count % self.fail_every == 0:
            raise AdapterError("engine", f"fake failure on request {req.request_id}")
        if self.max_concurrency:
            if self._sem is None:
                self._sem = asyncio.Semaphore(self.max_concurrency)
            await self._sem.acquire()
        self._running += 1
        try:
            if self.ttft_s:
                await asyncio.sleep(self.ttft_s)
            left = req.max_tokens
            first = True
            while left > 0:
                n = 1 if first else min(self.tokens_per_chunk, left)
                if not first:
                    # zero delay still yields to the loop: each chunk is its own loop turn, as when streamed
                    await asyncio.sleep(self.tpot_s * n)
                left -= n
                first = False
                yield Chunk(time.perf_counter_ns(), n, n_prompt=req.n_in if left == 0 else None)
        finally:
            self._running -= 1
            if self._sem is not None:
                self._sem.release()

    def stats(self) -> dict[str, float]:
        return {"running": float(self._running)}

    def close(self) -> None:
        pass
