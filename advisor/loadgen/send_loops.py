"""When each request goes out: the open loop (at its scheduled time), the closed loop (N users, each after the
previous answer and a think time) and multi-turn sessions, and the precise wait they share (`sleep_until`).

A request's prompt is built before its send time, never between its due time and its send: a build of a long
prompt holds the loop for milliseconds (3-6 ms for copilot's on the CI VM), and built in that window it made
sends on time reach the engine late (advisor.loadgen.drive runs these loops and records what happened).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from adapters.base import Chunk, RequestSpec
from advisor.loadgen import cpu_wait
from advisor.loadgen.records import RequestRecord
from scenarios.types import Schedule

# Sleep until this close to a send time, then yield to the loop until it is due:
# asyncio.sleep alone overshoots by up to a millisecond or more.
_SPIN_S = 0.0012
_OVERSHOOT_SHARE = 0.05  # a wait longer than _SPIN_S stops this share of itself early, then waits the rest
_IDLE_TURN_NS = 20_000  # a turn of the loop this short found nothing else to do
_NAP_S = 50e-6  # then nap this long (the kernel adds its timer slack, ~50 us)
_NAP_NS = 150_000  # but only while the send is further away than one nap can overshoot
# Requests already late are started together, at most this many per turn of the loop: their sends then go out
# back to back, ahead of the answers waiting to be read (their arrival times are stamped as they are received,
# so reading them a little later changes no measurement), and the client catches up after a stall at the rate it
# can send rather than the rate it can send and read.
_BURST_MAX = 16
# Prompts built ahead of their send time: at most this many, and only while the next send is this far away.
PREFETCH_MAX = 64
PREFETCH_MARGIN_NS = 3_000_000

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


async def sleep_until(t_target_ns: int) -> None:
    """Until t_target_ns; always yields to the loop at least once, so requests already due go out first.

    The last _SPIN_S are spent yielding to the loop (it serves I/O meanwhile); when a turn of the loop
    found nothing else to do, the thread naps _NAP_S so an idle client does not burn its core (its CPU per
    request stays a real figure), at the cost of a chunk stamped up to ~0.1 ms late in an idle moment. No
    other work is done in those turns: a piece of work that outlasts them makes the send late.
    """
    delay = (t_target_ns - time.perf_counter_ns()) / 1e9
    while delay > _SPIN_S:
        # the client's run-queue wait is counted from the last of these sleeps to the send (RequestRecord)
        cpu_wait.mark()
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


async def open_loop(records: list[RequestRecord], specs: SpecSource, one, t0: int,
                     tasks: set[asyncio.Task[None]]) -> None:
    order = sorted(range(len(records)), key=lambda i: records[i].t_sched_ns)
    ahead: dict[int, RequestSpec] = {}
    built = 0  # position in `order` of the next prompt to build
    burst = 0  # requests started in this turn of the loop
    build_ns = PREFETCH_MARGIN_NS // 2  # the longest prompt build seen: a build ahead must end before the send

    def build(j: int) -> None:
        nonlocal built, build_ns
        t = time.perf_counter_ns()
        ahead[order[j]] = specs(order[j])
        build_ns = max(build_ns, time.perf_counter_ns() - t)
        built += 1

    def room(due: int) -> bool:
        """A prompt built ahead now would still end well before the send due at `due`."""
        return due - time.perf_counter_ns() > max(PREFETCH_MARGIN_NS, 2 * build_ns)

    for k, i in enumerate(order):
        due = t0 + records[i].t_sched_ns
        # build this request's prompt, then the next ones while the send is still comfortably far away, so
        # sends after a stall find theirs built
        while built < len(order) and (built <= k or (built < k + PREFETCH_MAX and room(due))):
            build(built)
        if burst < _BURST_MAX and due <= time.perf_counter_ns():
            burst += 1  # late already (the loop stalled): sent in this same turn, before any answer is read
        else:
            await sleep_until(due)
            burst = 1
        task = asyncio.create_task(one(records[i], ahead.pop(i)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        if k + 1 < len(order) and t0 + records[order[k + 1]].t_sched_ns > time.perf_counter_ns():
            # the next send is not due yet: let this one go out before the next prompts are built (a build of a
            # long prompt takes milliseconds; built first, it made a send on time reach the engine 2-10 ms late)
            await asyncio.sleep(0)


async def closed_loop(schedule: Schedule, records: list[RequestRecord], specs: SpecSource, one, t0: int) -> None:
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


async def session_loop(schedule: Schedule, records: list[RequestRecord], specs: SessionSource, one, t0: int,
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
                await sleep_until(t0 + due)
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
        await sleep_until(t0 + start_ns)
        task = asyncio.create_task(run(turns, start_ns, first))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        await asyncio.sleep(0)  # its first turn goes out before the next session's first prompt is built
