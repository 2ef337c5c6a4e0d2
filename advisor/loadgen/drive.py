"""The asyncio load generator: drives a schedule into an adapter and records raw facts.

Open loop: each request goes out at its scheduled time whether or not earlier
ones finished, and its lag (t_send - t_sched) is recorded, so client-side
queueing can never hide. Closed loop: N users, each sending its next request
after the previous one finished plus a think time. Offline: everything at t=0.
Multi-turn sessions (`schedule.sessions`): `_session_loop`, whose turns go out a
think time after the previous answer, with prompts that hold that answer.
Prompts are built as requests go out (`specs(i)` is called once per request,
a bounded number ahead of its send time), so memory does not grow with the
schedule. It computes no metrics: one `RequestRecord` per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from adapters.base import Adapter, AdapterError, Chunk, RequestSpec
from adapters.deadlines import DONE, EXPIRED, Deadlines
from advisor.loadgen.records import RequestRecord
from scenarios.types import Schedule

# Sleep until this close to a send time, then yield to the loop until it is due:
# asyncio.sleep alone overshoots by up to a millisecond or more.
_SPIN_S = 0.0012
_OVERSHOOT_SHARE = 0.05  # a wait longer than _SPIN_S stops this share of itself early, then waits the rest
_IDLE_TURN_NS = 20_000  # a turn of the loop this short found nothing else to do
_NAP_S = 50e-6  # then nap this long (the kernel adds its timer slack, ~50 us)
_NAP_NS = 150_000  # but only while the send is further away than one nap can overshoot
# Young-generation garbage collection interval while a run is on (see _young_gc_only).
_GC_INTERVAL_S = 0.5
# Requests already late are started together, at most this many per turn of the loop: their sends then go out
# back to back, ahead of the answers waiting to be read (their arrival times are stamped as they are received,
# so reading them a little later changes no measurement), and the client catches up after a stall at the rate it
# can send rather than the rate it can send and read.
_BURST_MAX = 16
# Prompts built ahead of their send time: at most this many, and only while the next send is this far away.
PREFETCH_MAX = 64
_PREFETCH_MARGIN_NS = 3_000_000

Progress = Callable[[int, int], None]  # (finished, total)
SpecSource = Callable[[int], RequestSpec]  # schedule index -> the concrete request


class SessionTurn(Protocol):
    spec: RequestSpec
    n_shared: int
    n_dropped: int


@runtime_checkable
class SessionSource(Protocol):
    """Prompts of a multi-turn schedule (advisor.loadgen.sessions.SessionPrompts), asked for in turn order per session."""

    def __call__(self, i: int) -> RequestSpec: ...
    def turn(self, i: int) -> SessionTurn: ...
    def answered(self, i: int, chunks: Sequence[Chunk], ok: bool) -> None: ...
    def forget(self, session_id: int) -> None: ...


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
                on_record: Callable[[RequestRecord], None] | None = None, worker: int = 0) -> LoadResult:
    """Run the whole schedule; never raises for a failed request (it becomes an errored record).

    Cancelling the task that runs it stops the run: what was measured comes back with `interrupted` set.
    `start_ns` (perf_counter_ns) is a common start time agreed with other workers (default: now);
    `on_record` sees each record once its request has ended; `worker` is stamped on every record.
    """
    # the records exist before the collector is frozen: frozen, no young collection during the run walks them
    # (the first one did: ~20 ms with 30,000 records, enough to make a hundred sends late at 2,000 req/s)
    records = [RequestRecord(idx=r.idx, request_id=f"{schedule.scenario}-{r.idx}", t_sched_ns=int(r.t_sched_s * 1e9),
                             n_in_client=r.n_in, max_tokens=r.n_out, warmup=r.warmup, worker=worker,
                             session_id=r.session_id, turn=r.turn if r.session_id is not None else None)
               for r in schedule.requests]
    async with _young_gc_only():  # entered before t0: its one full collection must not delay the first send
        return await _drive(adapter, schedule, records, specs, timeout_s, max_run_s, progress, start_ns, on_record)


async def _drive(adapter: Adapter, schedule: Schedule, records: list[RequestRecord], specs: SpecSource | SessionSource,
                 timeout_s: float, max_run_s: float | None, progress: Progress | None, start_ns: int | None,
                 on_record: Callable[[RequestRecord], None] | None) -> LoadResult:
    done = 0
    total = len(records)
    t0 = time.perf_counter_ns() if start_ns is None else start_ns
    if start_ns is not None:
        await _sleep_until(start_ns - _PREFETCH_MARGIN_NS)  # the first prompts are built just before t0

    # one timer for every request's timeout (adapters.deadlines): asyncio.timeout() per request cost ~3% of the core
    deadlines = Deadlines(timeout_s, _expire)
    current_task = asyncio.current_task

    async def one(rec: RequestRecord, spec: RequestSpec, keep: list[Chunk] | None = None) -> None:
        nonlocal done
        task = current_task()
        assert task is not None
        cancelling = task.cancelling()
        deadline = deadlines.add(task)
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
            if rec.error_kind != "cancelled":
                done += 1
                if on_record is not None:
                    on_record(rec)
            if progress is not None:
                progress(done, total)

    tasks: set[asyncio.Task[None]] = set()
    if schedule.sessions is not None:
        assert isinstance(specs, SessionSource), "a session schedule needs a SessionSource (advisor.loadgen.sessions)"
        runner = _session_loop(schedule, records, specs, one, t0, tasks)
    elif schedule.mode == "closed":
        runner = _closed_loop(schedule, records, specs, one, t0)
    else:
        runner = _open_loop(records, specs, one, t0, tasks)

    async def run_all() -> None:
        await runner
        while tasks:
            await asyncio.gather(*list(tasks), return_exceptions=True)

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


async def _sleep_until(t_target_ns: int) -> None:
    """Until t_target_ns; always yields to the loop at least once, so requests already due go out first.

    The last _SPIN_S are spent yielding to the loop (it serves I/O meanwhile); when a turn of the loop
    found nothing else to do, the thread naps _NAP_S so an idle client does not burn its core (its CPU per
    request stays a real figure), at the cost of a chunk stamped up to ~0.1 ms late in an idle moment. No
    other work is done in those turns: a piece of work that outlasts them makes the send late.
    """
    delay = (t_target_ns - time.perf_counter_ns()) / 1e9
    while delay > _SPIN_S:
        # A timer overshoots in proportion to its length on some VMs (seen: 0.6 s asleep woke 2.5 ms late, more
        # under load), past _SPIN_S: so a long wait stops short by _OVERSHOOT_SHARE of itself and sleeps again.
        await asyncio.sleep(delay - _SPIN_S - _OVERSHOOT_SHARE * delay)
        delay = (t_target_ns - time.perf_counter_ns()) / 1e9
    await asyncio.sleep(0)
    now = time.perf_counter_ns()
    while now < t_target_ns:
        await asyncio.sleep(0)
        after = time.perf_counter_ns()
        if after - now < _IDLE_TURN_NS and t_target_ns - after > _NAP_NS:
            time.sleep(_NAP_S)
            after = time.perf_counter_ns()
        now = after


async def _open_loop(records: list[RequestRecord], specs: SpecSource, one, t0: int,
                     tasks: set[asyncio.Task[None]]) -> None:
    order = sorted(range(len(records)), key=lambda i: records[i].t_sched_ns)
    ahead: dict[int, RequestSpec] = {}
    built = 0  # position in `order` of the next prompt to build
    burst = 0  # requests started in this turn of the loop
    build_ns = _PREFETCH_MARGIN_NS // 2  # the longest prompt build seen: a build ahead must end before the send

    def build(j: int) -> None:
        nonlocal built, build_ns
        t = time.perf_counter_ns()
        ahead[order[j]] = specs(order[j])
        build_ns = max(build_ns, time.perf_counter_ns() - t)
        built += 1

    def room(due: int) -> bool:
        """A prompt built ahead now would still end well before the send due at `due`."""
        return due - time.perf_counter_ns() > max(_PREFETCH_MARGIN_NS, 2 * build_ns)

    for k, i in enumerate(order):
        due = t0 + records[i].t_sched_ns
        # build this request's prompt, then the next ones while the send is still comfortably far away, so
        # sends after a stall find theirs built
        while built < len(order) and (built <= k or (built < k + PREFETCH_MAX and room(due))):
            build(built)
        if burst < _BURST_MAX and due <= time.perf_counter_ns():
            burst += 1  # late already (the loop stalled): sent in this same turn, before any answer is read
        else:
            await _sleep_until(due)
            burst = 1
        task = asyncio.create_task(one(records[i], ahead.pop(i)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        if k + 1 < len(order) and t0 + records[order[k + 1]].t_sched_ns > time.perf_counter_ns():
            # the next send is not due yet: let this one go out before the next prompts are built (a build of a
            # long prompt takes milliseconds; built first, it made a send on time reach the engine 2-10 ms late)
            await asyncio.sleep(0)


async def _closed_loop(schedule: Schedule, records: list[RequestRecord], specs: SpecSource, one, t0: int) -> None:
    users = max(1, schedule.concurrency or 1)
    queue = list(range(len(records)))
    queue.reverse()  # pop() from the end = schedule order

    async def user() -> None:
        while queue:
            i = queue.pop()
            think = schedule.requests[i].think_s
            if think > 0:
                await asyncio.sleep(think)
            spec = specs(i)
            records[i].t_sched_ns = time.perf_counter_ns() - t0  # a closed-loop user sends when ready
            await one(records[i], spec)

    await asyncio.gather(*(user() for _ in range(users)))


async def _session_loop(schedule: Schedule, records: list[RequestRecord], specs: SessionSource, one, t0: int,
                        tasks: set[asyncio.Task[None]]) -> None:
    """Multi-turn sessions: each turn a think time after the previous answer ended, its prompt built then.

    Closed (`sessions.users`): that many users, each running whole sessions one after another. Open: a
    task per session, started at its first turn's t_sched; a turn is measured when it falls due inside the
    window [warmup_s, window_end_s] and is not sent when it falls due after it. t_sched of a later turn
    is when it fell due (previous end + think), so send lag stays the load generator's own.
    """
    plan = schedule.sessions
    assert plan is not None
    sessions: list[list[int]] = []
    for k, r in enumerate(schedule.requests):  # a session's turns are consecutive, turn 0 first
        if r.turn == 0 or not sessions:
            sessions.append([])
        sessions[-1].append(k)  # positions: a worker's shard keeps the schedule's idx, not its positions
    warm_ns = int(schedule.warmup_s * 1e9)
    end_ns = int(plan.window_end_s * 1e9) if plan.window_end_s is not None else None

    async def run(turns: list[int], start_ns: int, first: SessionTurn | None = None) -> None:
        prev_end = start_ns
        for k, i in enumerate(turns):
            rec, r = records[i], schedule.requests[i]
            due = prev_end + int(r.think_s * 1e9)
            if end_ns is not None and due > end_ns:  # the measurement is over: this user's session stops here
                for j in turns[k:]:
                    records[j].warmup = True
                    records[j].error_kind = "cancelled"
                    records[j].error = "not sent: its turn fell due after the measurement window ended"
                break
            # known since the previous answer ended: built during the think time (a first turn given built)
            if k == 0 and first is not None:
                turn = first  # the caller built it and waited until it was due
            else:
                turn = specs.turn(i)
                await _sleep_until(t0 + due)
            rec.t_sched_ns = due
            if end_ns is not None:
                rec.warmup = due < warm_ns
            rec.n_in_shared, rec.turns_dropped = turn.n_shared, turn.n_dropped
            chunks: list[Chunk] = []
            await one(rec, turn.spec, chunks)
            specs.answered(i, chunks, rec.ok)
            prev_end = rec.t_end_ns if rec.t_end_ns is not None else time.perf_counter_ns() - t0
        specs.forget(schedule.requests[turns[0]].session_id or 0)

    if plan.users is not None:
        queue = list(reversed(sessions))

        async def user() -> None:
            while queue:
                await run(queue.pop(), time.perf_counter_ns() - t0)

        await asyncio.gather(*(user() for _ in range(plan.users)))
        return
    for turns in sessions:  # sessions in start order
        start_ns = records[turns[0]].t_sched_ns
        first = specs.turn(turns[0])  # before its due time, not between it and the send
        await _sleep_until(t0 + start_ns)
        task = asyncio.create_task(run(turns, start_ns, first))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        await asyncio.sleep(0)  # its first turn goes out before the next session's first prompt is built
