"""A deterministic engine with known delays and no model, for tests and load-generator benchmarks.

`fake` with `ttft_ms=20, tpot_ms=5, tokens_per_chunk=1` streams exactly
`max_tokens` tokens: the first after `ttft_ms`, then one chunk every
`tpot_ms * tokens_per_chunk`. With all delays at 0 it is a zero-work engine
that measures the load generator itself. `jitter_ms` adds a seeded random
delay (uniform in [0, jitter_ms)) to each request's first token, so repeats
differ by a known amount. `fail_every=N` makes every N-th request (warm-up
excluded) fail with an 'engine' error; `max_batch` queues requests beyond it
(a crude capacity model for saturation tests). `echo_ids` makes every chunk
carry token ids, a deterministic function of the prompt (`answer_ids`), as
in-process engines do: multi-turn tests check that the next turn resends them.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import AsyncIterator
from typing import ClassVar

from pydantic import Field

from adapters.base import Adapter, AdapterError, Capabilities, Chunk, EngineInfo, EngineOptions, RequestSpec


class FakeOptions(EngineOptions):
    ttft_ms: float = Field(0.0, ge=0, description="delay before the first token")
    tpot_ms: float = Field(0.0, ge=0, description="delay per later token")
    tokens_per_chunk: int = Field(1, ge=1, description="tokens carried by each chunk after the first")
    jitter_ms: float = Field(0.0, ge=0, description="seeded random extra delay before the first token")
    seed: int = Field(0, ge=0, description="seed of the jitter")
    fail_every: int = Field(0, ge=0, description="every N-th request fails (0: none)")
    vocab_size: int = Field(32000, ge=16, description="vocabulary size it reports")
    max_model_len: int | None = Field(None, ge=2, description="context limit it enforces (None: none)")
    echo_ids: bool = Field(False, description="chunks carry token ids, a deterministic function of the prompt")


class FakeAdapter(Adapter[FakeOptions]):
    name: ClassVar[str] = "fake"
    Options: ClassVar[type[FakeOptions]] = FakeOptions
    capabilities: ClassVar[Capabilities] = Capabilities(served=False, per_chunk_tokens=True, model_source="none")

    def __init__(self, model: str | None = None, options: FakeOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.o = self.options
        self._count = 0
        self._running = 0
        self._rng = random.Random(o.seed)
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop: asyncio.AbstractEventLoop | None = None

    def _start(self) -> EngineInfo:
        o = self.o
        return EngineInfo(adapter="fake", engine="fake", version="0", device="none", model="none",
                          format="none", precision="none", batching="static" if o.max_batch else "continuous",
                          max_batch=o.max_batch, vocab_size=o.vocab_size, max_model_len=o.max_model_len,
                          pid=os.getpid(),
                          extra={"ttft_ms": o.ttft_ms, "tpot_ms": o.tpot_ms, "tokens_per_chunk": o.tokens_per_chunk,
                                 "jitter_ms": o.jitter_ms})

    def _semaphore(self) -> asyncio.Semaphore | None:
        if not self.o.max_batch:
            return None
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem, self._sem_loop = asyncio.Semaphore(self.o.max_batch), loop
        return self._sem

    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        o = self.o
        self.refuse_unservable(req, o.max_model_len, f"max_model_len {o.max_model_len}")
        if not req.request_id.startswith("warmup-"):
            self._count += 1
            if o.fail_every and self._count % o.fail_every == 0:
                raise AdapterError("engine", f"fake failure on request {req.request_id}")
        jitter_s = self._rng.random() * o.jitter_ms / 1e3 if o.jitter_ms else 0.0
        sem = self._semaphore()
        if sem is not None:
            await sem.acquire()
        self._running += 1
        try:
            if o.ttft_ms or jitter_s:
                await wait_at_least(o.ttft_ms / 1e3 + jitter_s)
            ids = answer_ids(req.prompt_ids, req.max_tokens, o.vocab_size) if o.echo_ids else None
            left = req.max_tokens
            first = True
            while left > 0:
                n = 1 if first else min(o.tokens_per_chunk, left)
                if not first:
                    # zero delay still yields to the loop: each chunk is its own loop turn, as when streamed
                    await wait_at_least(o.tpot_ms / 1e3 * n)
                done = req.max_tokens - left
                left -= n
                first = False
                yield Chunk(time.perf_counter_ns(), n, n_prompt=req.n_in if left == 0 else None,
                            token_ids=ids[done:done + n] if ids is not None else None, token_source="engine")
        finally:
            self._running -= 1
            if sem is not None:
                sem.release()

    def stats(self) -> dict[str, float]:
        return {"running": float(self._running)}


async def wait_at_least(delay_s: float) -> None:
    """Yield to the loop for `delay_s` or a little more, never less.

    asyncio.sleep alone can wake early: libuv keeps uvloop's clock in whole milliseconds, so when I/O wakes the
    loop near a deadline the timer fires up to ~1 ms before its delay has passed (CI measured a 15 ms TTFT as
    14.94 ms). The fake engine's delays are lower bounds that tests measure against, so a wake before the
    deadline sleeps again for what is left (the last fraction of a millisecond in loop turns).
    """
    deadline = time.perf_counter_ns() + int(delay_s * 1e9)
    await asyncio.sleep(delay_s)
    while (left := deadline - time.perf_counter_ns()) > 0:
        await asyncio.sleep(left / 1e9)


def answer_ids(prompt_ids: tuple[int, ...], n: int, vocab_size: int) -> tuple[int, ...]:
    """The `n` token ids the fake engine answers `prompt_ids` with (echo_ids): a pure function of the prompt."""
    h = hash(prompt_ids) & 0xFFFFFFFF  # tuples of ints hash the same in every process (no salt for ints)
    lo = min(3, vocab_size - 1)
    return tuple(lo + (h + 7919 * j) % (vocab_size - lo) for j in range(n))
