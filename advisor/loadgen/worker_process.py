"""One load-generator worker: attach to the engine, wait for the start time, drive a shard, stream records back.

`run_shard` is the worker itself, independent of how it is hosted: it gets a
`Shard`, a start time in its own monotonic clock and an `emit` callback, and
returns the shard's `LoadResult`. `worker_main` hosts it in a process started
by `advisor.loadgen.workers` (`python -m advisor.loadgen.worker_process FD`) and talks to the driver over a socket:

    driver -> worker: Shard, then ("go", start_ns) | ("stop",)
    worker -> driver: ("ready",) | ("failed", why) | ("records", [RequestRecord]) | ("done", report)

A worker on another host (`advisor.loadgen.ray_actor`, `--workers ray:N`) calls `run_shard` the same way,
with the start time translated into its clock (`advisor.loadgen.clock_sync`) and `emit` buffering for the driver's polls.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from adapters.base import Adapter, WorkerClient
from advisor.loadgen import eventloop
from advisor.loadgen.drive import LoadResult, SpecSource, drive
from advisor.loadgen.records import RequestRecord
from scenarios.types import Schedule

FLUSH_S = 0.05  # records go back at least this often while a run is on
Emit = Callable[[list[RequestRecord]], None]


@dataclass(frozen=True)
class Shard:
    """One worker's part of a run (picklable)."""

    worker: int
    client: WorkerClient
    schedule: Schedule  # the worker's requests, with their indices and times in the whole schedule
    timeout_s: float
    max_run_s: float | None
    cpus: list[int] | None = None  # pin the worker to these CPUs (None: inherit)


async def run_shard(shard: Shard, adapter: Adapter, specs: SpecSource, start_ns: int, emit: Emit) -> LoadResult:
    """Drive the shard from `start_ns`; every record is emitted once (as it ends, the rest at the end)."""
    pending: list[RequestRecord] = []
    emitted: set[int] = set()

    def flush() -> None:
        if pending:
            batch = pending[:]
            pending.clear()
            emitted.update(r.idx for r in batch)
            emit(batch)

    async def flush_often() -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            flush()

    flusher = asyncio.create_task(flush_often())
    try:
        result = await drive(adapter, shard.schedule, specs, timeout_s=shard.timeout_s, max_run_s=shard.max_run_s,
                             start_ns=start_ns, on_record=pending.append, worker=shard.worker)
    finally:
        flusher.cancel()
        try:
            await adapter.aclose()
        finally:
            flush()
    rest = [r for r in result.records if r.idx not in emitted]
    if rest:
        emit(rest)
    return result


def worker_main(conn: Any) -> None:
    """Process entry point: the Shard comes first over `conn`, then the driver's go or stop."""
    # Ctrl-C and a hang-up reach the whole process group: the driver decides when its workers stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        shard: Shard = conn.recv()
    except EOFError:
        return
    try:
        from adapters import attach
        from adapters.placement import pin_self
        from advisor.loadgen.spec_source import spec_source

        pin_self(shard.cpus)
        adapter = attach(shard.client)
        specs = spec_source(shard.schedule, shard.client.info, adapter)
        if shard.schedule.requests and shard.schedule.sessions is None:
            specs(0)  # pay for the imports and caches of prompt building now, not at the first send
        eventloop.name()  # and for the event loop's
    except Exception as e:  # reported to the driver, which names the worker
        conn.send(("failed", f"{type(e).__name__}: {e}"))
        return
    conn.send(("ready",))
    try:
        msg = conn.recv()
    except EOFError:
        return  # the driver went away before the start
    if msg[0] != "go":
        return
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = eventloop.run(_run(conn, shard, adapter, specs, int(msg[1])))
    conn.send(("done", {"worker": shard.worker, "pid": os.getpid(), "cpus": shard.cpus, "exit": "done",
                        "n_requests": len(shard.schedule.requests), "n_finished": result.n_finished,
                        "cpu_s": round(time.process_time() - cpu0, 4),
                        "wall_s": round(time.perf_counter() - wall0, 4), "interrupted": result.interrupted,
                        "event_loop": eventloop.name(), "notes": list(adapter.notes)}))
    conn.close()


async def _run(conn: Any, shard: Shard, adapter: Adapter, specs: SpecSource, start_ns: int) -> LoadResult:
    """run_shard, stopped by the driver's ("stop",) or by its pipe closing (the driver died)."""
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(run_shard(shard, adapter, specs, start_ns, lambda recs: conn.send(("records", recs))))

    def watch() -> None:
        try:
            conn.recv()  # ("stop",): nothing else comes after "go"
        except (EOFError, OSError):
            pass
        try:
            loop.call_soon_threadsafe(task.cancel)
        except RuntimeError:  # the run already ended and its loop closed
            pass

    threading.Thread(target=watch, name="advisor-worker-stop", daemon=True).start()
    return await task


if __name__ == "__main__":
    import sys
    from multiprocessing.connection import Connection

    worker_main(Connection(int(sys.argv[1])))
