"""The asyncio load generator: drives a schedule into an adapter and records raw facts.

Open loop: each request goes out at its scheduled time whether or not earlier
ones finished, and its lag (t_send - t_sched) is recorded, so client-side
queueing can never hide. Closed loop: N users, each sending its next request
after the previous one finished plus a think time. Offline: everything at t=0.
Multi-turn sessions (`schedule.sessions`): `session_loop`, whose turns go out a
think time after the previous answer, with prompts that hold that answer. The
three loops and their wait live in `advisor.loadgen.send_loops`.
Prompts are built as requests go out (`specs(i)` is called once per request,
a bounded number ahead of its send time), so memory does not grow with the
schedule. It computes no metrics: one `RequestRecord` per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from adapters.base import Adapter, AdapterError, Chunk, RequestSpec
from adapters.deadlines import DONE, EXPIRED, Deadlines
from advisor.loadgen import cpu_wait, stall
from advisor.loadgen.records import RequestRecord
from advisor.loadgen.send_loops import (
    PREFETCH_MARGIN_NS,
    SessionSource,
    SpecSource,
    closed_loop,
    open_loop,
    session_loop,
    sleep_until,
)
from scenarios.types import Schedule

# Young-generation garbage collection interval while a run is on (see _young_gc_only).
_GC_INTERVAL_S = 0.5

Progress = Callable[[int, int], None]  # (finished, total)


@dataclass
class LoadResult:
    records: list[RequestRecord]
    t0_ns: int  # perf_counter_ns at the run's start; record times are relative to it
    wall_s: float
    interrupted: str | None = None  # why the run stopped early, if it did
    n_finished: int = 0  # requests that ended (successfully or not) before the run stopped
    workers: list[dict[str, Any]] = field(default_factory=list)  # per worker: requests, CPU, send lag (advisor.loadgen.workers)
    notes: tuple[str, ...] = ()  # what workers' adapters learned while serving


async def drive(adapter: Adapter, schedule: Schedule, specs: SpecSource | SessionSource, *, timeout_s: float = 600.0,
                max_run_s: float | None = None, progress: Progress | None = None, start_ns: int | None = None,
                on_record: Callable[[RequestRecord], None] | None = None, worker: int = 0,
                on_stall: Callable[[stall.Stall], None] | None = None, stall_every_s: float = stall.EVERY_S) -> LoadResult:
    """Run the whole schedule; never raises for a failed request (it becomes an errored record).

    Cancelling the task that runs it stops the run: what was measured comes back with `interrupted` set.
    `start_ns` (perf_counter_ns) is a common start time agreed with other workers (default: now);
    `on_record` sees each record once its request has ended; `worker` is stamped on every record;
    `on_stall` hears, at most once per `stall_every_s`, that requests are open and nothing arrived (advisor.loadgen.stall).
    """
    # the records exist before the collector is frozen: frozen, no young collection during the run walks them
    # (the first one did: ~20 ms with 30,000 records, enough to make a hundred sends late at 2,000 req/s)
    records = [RequestRecord(idx=r.idx, request_id=f"{schedule.scenario}-{r.idx}", t_sched_ns=int(r.t_sched_s * 1e9),
                             n_in_client=r.n_in, max_tokens=r.n_out, warmup=r.warmup, worker=worker,
                             session_id=r.session_id, turn=r.turn if r.session_id is not None else None)
               for r in schedule.requests]
    cpu_wait.mark()
    try:
        async with _young_gc_only():  # entered before t0: its one full collection must not delay the first send
            return await _drive(adapter, schedule, records, specs, timeout_s, max_run_s, progress, start_ns, on_record,
                                on_stall, stall_every_s)
    finally:
        cpu_wait.close()


async def _drive(adapter: Adapter, schedule: Schedule, records: list[RequestRecord], specs: SpecSource | SessionSource,
                 timeout_s: float, max_run_s: float | None, progress: Progress | None, start_ns: int | None,
                 on_record: Callable[[RequestRecord], None] | None, on_stall: Callable[[stall.Stall], None] | None,
                 stall_every_s: float) -> LoadResult:
    done = 0
    in_flight: dict[int, RequestRecord] = {}  # sent and not ended, oldest first (what the stall watch reads)
    ended_chunks = 0  # chunks of ended requests: with `done` and the open ones' chunks, a count of arrivals
    total = len(records)
    t0 = time.perf_counter_ns() if start_ns is None else start_ns
    if start_ns is not None:
        await sleep_until(start_ns - PREFETCH_MARGIN_NS)  # the first prompts are built just before t0

    # one timer for every request's timeout (adapters.deadlines): asyncio.timeout() per request cost ~3% of the core
    deadlines = Deadlines(timeout_s, _expire)
    current_task = asyncio.current_task

    async def one(rec: RequestRecord, spec: RequestSpec, keep: list[Chunk] | None = None) -> None:
        nonlocal done, ended_chunks
        task = current_task()
        assert task is not None
        cancelling = task.cancelling()
        deadline = deadlines.add(task)
        in_flight[rec.idx] = rec
        try:
            await _stream_into(adapter, rec, spec, t0, keep)
        except asyncio.CancelledError:
            # the deadline cancelled it and nothing else did: a timeout (as asyncio.timeout() decides it)
            if deadline[2] == EXPIRED:
                deadline[2] = DONE
                if task.uncancel() <= cancelling:
                    rec.error_kind, rec.error = "timeout", f"no complete answer within {timeout_s:g} s"
                    return
            rec.error_kind, rec.error = "cancelled", "the run was stopped before this request finished"
            raise
        finally:
            if deadline[2] == EXPIRED:  # it passed as the request ended anyway: take its cancel back
                task.uncancel()
            deadline[2] = DONE
            rec.t_end_ns = time.perf_counter_ns() - t0
            del in_flight[rec.idx]
            ended_chunks += len(rec.chunk_t_ns)
            if rec.error_kind != "cancelled":
                done += 1
                if on_record is not None:
                    on_record(rec)
            if progress is not None:
                progress(done, total)

    tasks: set[asyncio.Task[None]] = set()
    if schedule.sessions is not None:
        assert isinstance(specs, SessionSource), "a session schedule needs a SessionSource (advisor.loadgen.sessions)"
        runner = session_loop(schedule, records, specs, one, t0, tasks)
    elif schedule.mode == "closed":
        runner = closed_loop(schedule, records, specs, one, t0)
    else:
        runner = open_loop(records, specs, one, t0, tasks)

    async def run_all() -> None:
        await runner
        while tasks:
            await asyncio.gather(*list(tasks), return_exceptions=True)

    def arrivals() -> int:
        return done + ended_chunks + sum(len(r.chunk_t_ns) for r in in_flight.values())

    watcher = None if on_stall is None else asyncio.create_task(
        stall.watch(in_flight, arrivals, t0, timeout_s, on_stall, stall_every_s))
    interrupted = None
    try:
        async with asyncio.timeout_at(None if max_run_s is None else
                                      asyncio.get_running_loop().time() + max_run_s + (t0 - time.perf_counter_ns()) / 1e9):
            await run_all()
    except TimeoutError:
        interrupted = f"stopped after the run limit of {max_run_s:g} s"
    except asyncio.CancelledError:
        interrupted = cancel_handled()
    finally:
        if watcher is not None:
            watcher.cancel()
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*list(tasks), return_exceptions=True)
        deadlines.close()
    for rec in records:  # requests never sent because the run stopped early
        if rec.t_send_ns is None and rec.error_kind is None:
            rec.error_kind, rec.error = "cancelled", "never sent: the run stopped first"
    return LoadResult(records, t0, (time.perf_counter_ns() - t0) / 1e9, interrupted, done)


def _expire(task: asyncio.Task[None]) -> None:
    """A request's deadline passed: cancel the task awaiting it (`one` turns that into a timeout)."""
    task.cancel()


def cancel_handled() -> str:
    """Called in a run's `except CancelledError`: the run returns what it measured, so the cancellation is
    taken back (later awaits in its cleanup run normally). Returns the run's `interrupted` reason."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    return "interrupted"


@contextlib.asynccontextmanager
async def _young_gc_only():
    """No full garbage collections during a run: they stall the loop for tens of ms.

    Python's automatic GC eventually walks every object, records included, and on
    a loaded run that pause shows up as send lag. Objects alive at the start are
    frozen, automatic GC is off, and a task collects the young generations (cheap:
    only recent objects) every _GC_INTERVAL_S so short-lived cycles are still freed.
    """
    if not gc.isenabled():  # the caller manages GC itself
        yield
        return
    gc.collect()
    gc.freeze()
    gc.disable()

    async def collect_young() -> None:
        while True:
            await asyncio.sleep(_GC_INTERVAL_S)
            gc.collect(1)

    task = asyncio.create_task(collect_young())
    try:
        yield
    finally:
        task.cancel()
        gc.unfreeze()
        gc.enable()


async def _stream_into(adapter: Adapter, rec: RequestRecord, spec: RequestSpec, t0: int,
                       keep: list[Chunk] | None = None) -> None:
    """Stream one request into its record; `keep` (multi-turn sessions) also receives the chunks themselves."""
    rec.t_send_ns = time.perf_counter_ns() - t0
    rec.client_wait_ns = cpu_wait.since_mark()
    rec.n_in_client = spec.n_in
    n_prompt: int | None = None
    n_total: int | None = None
    n_client: int | None = None
    # per chunk: its arrival time and token count, and the few fields an adapter sets on some chunks only
    chunk_t, chunk_tokens, engine_t = rec.chunk_t_ns.append, rec.chunk_tokens.append, rec.chunk_t_engine_ns.append
    prev: Chunk | None = None
    try:
        async for ch in adapter.stream(spec):
            if keep is not None:
                keep.append(ch)
            if ch is prev and ch.t_engine_ns is None:  # the same chunk again (one read's events): only its time and count
                chunk_t(ch.t_ns - t0)
                chunk_tokens(ch.n_tokens)
                continue
            prev = ch
            chunk_t(ch.t_ns - t0)
            chunk_tokens(ch.n_tokens)
            if ch.t_engine_ns is not None:
                engine_t(ch.t_engine_ns - t0)
            if ch.n_prompt is not None:
                n_prompt = ch.n_prompt
            if ch.n_out_total is not None:
                n_total = ch.n_out_total
            if ch.n_out_client is not None:
                n_client = ch.n_out_client
            if ch.token_source is not None:
                rec.token_source = ch.token_source
    except AdapterError as e:
        rec.error_kind, rec.error = e.kind, str(e)
    except Exception as e:  # an adapter bug must not end the run: record it and go on
        rec.error_kind, rec.error = "engine", f"{type(e).__name__}: {e}"
    finally:  # also on timeout/cancel: keep what was counted so far
        rec.n_in = n_prompt if n_prompt is not None else rec.n_in_client
        rec.n_out = n_total if n_total is not None else sum(rec.chunk_tokens)
        rec.n_out_client = n_client
        if rec.chunk_t_engine_ns and len(rec.chunk_t_engine_ns) != len(rec.chunk_t_ns):
            rec.chunk_t_engine_ns.clear()  # only some chunks had one: keep none rather than misalign
