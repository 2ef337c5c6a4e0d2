"""Drive an embed schedule into an embedding adapter, open loop, and keep one raw record per request.

Each request goes out at its scheduled offset (a late one at once: the lag is recorded, never hidden)
as its own task, so a slow answer never holds back the next send. Records hold timestamps and counts
only (`perf_counter_ns`); `advisor.embed.metrics` computes everything from them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from adapters.base import AdapterError
from adapters.embed_base import EmbedAdapter, EmbedRequest
from scenarios.embed_schedule import EmbedSchedule

R = TypeVar("R")
START_LEAD_NS = 20_000_000  # the first send is this far after the start, so it is not late by set-up time


@dataclass(frozen=True, slots=True)
class EmbedRecord:
    """One request as it happened; times are perf_counter_ns, relative to the run's start (t0)."""

    index: int
    warmup: bool
    n_inputs: int
    t_sched_ns: int
    t_send_ns: int
    t_done_ns: int | None  # answer (or error) on the client side
    n_tokens: int | None = None
    dim: int | None = None
    error_kind: str | None = None
    error: str | None = None
    n_tokens_padded: int | None = None  # the padded batch's tokens, as the engine said (EmbedResult.n_tokens_padded)

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.t_done_ns is not None

    @property
    def latency_ms(self) -> float | None:
        return (self.t_done_ns - self.t_send_ns) / 1e6 if self.ok and self.t_done_ns is not None else None

    @property
    def padding_waste(self) -> float | None:
        """(padded - real tokens) / padded tokens of an answered request; None where either count is not known (or
        the two disagree: fewer padded tokens than real ones is not a count to compute with)."""
        if not self.ok or self.n_tokens is None or not self.n_tokens_padded or self.n_tokens_padded < self.n_tokens:
            return None
        return (self.n_tokens_padded - self.n_tokens) / self.n_tokens_padded

    @property
    def send_lag_ms(self) -> float:
        return (self.t_send_ns - self.t_sched_ns) / 1e6


async def drive(adapter: EmbedAdapter, schedule: EmbedSchedule, timeout_s: float = 600.0) -> list[EmbedRecord]:
    """Send every scheduled request at its time; the records in schedule order."""
    t0 = time.perf_counter_ns() + START_LEAD_NS

    async def one(i: int, t_sched: int) -> EmbedRecord:
        plan = schedule.requests[i]
        t_send = time.perf_counter_ns()
        try:
            async with asyncio.timeout(timeout_s):
                res = await adapter.embed(EmbedRequest(f"r{i}", plan.texts, query=plan.query))
        except AdapterError as e:
            return EmbedRecord(i, plan.warmup, len(plan.texts), t_sched - t0, t_send - t0,
                               time.perf_counter_ns() - t0, error_kind=e.kind, error=str(e)[:300])
        except TimeoutError:
            return EmbedRecord(i, plan.warmup, len(plan.texts), t_sched - t0, t_send - t0,
                               time.perf_counter_ns() - t0, error_kind="timeout",
                               error=f"no answer within {timeout_s:g} s")
        return EmbedRecord(i, plan.warmup, res.n_inputs, t_sched - t0, t_send - t0, res.t_done_ns - t0,
                           res.n_tokens, res.dim, n_tokens_padded=res.n_tokens_padded)

    try:
        return await send_on_schedule([plan.t_s for plan in schedule.requests], t0, one)
    finally:
        await adapter.aclose()


async def send_on_schedule(offsets_s: list[float], t0: int, one: Callable[[int, int], Awaitable[R]]) -> list[R]:
    """Start `one(i, t_sched_ns)` as its own task at each offset after t0 (a late one at once), so a slow answer
    never holds back the next send; the results in schedule order. Cancelled (a signal: `advisor.run.interrupts`), it
    cancels the requests still open and returns the results of those that finished."""
    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task[R]] = []
    try:
        for i, offset in enumerate(offsets_s):
            t_sched = t0 + int(offset * 1e9)
            wait_s = (t_sched - time.perf_counter_ns()) / 1e9
            if wait_s > 0:
                await asyncio.sleep(wait_s)
            tasks.append(loop.create_task(one(i, t_sched)))
        return list(await asyncio.gather(*tasks))
    except asyncio.CancelledError:  # a signal stopped the run (advisor.run.interrupts): keep what finished
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return [t.result() for t in tasks if not t.cancelled() and t.exception() is None]
    finally:
        for t in tasks:
            t.cancel()
