"""Load-generator workers: one schedule sharded over several processes that start at one common time.

One Python process can send a few thousand streamed requests a second; a
served engine may take more. With N workers the schedule is dealt out
round-robin in send order (`shard`), so every worker's load has the
schedule's shape at 1/N of its rate, and a multi-turn session is never
split (`shard_key`). Each worker is a process that attaches to the engine the
driver started (`Adapter.attached`: no launch, no warm-up), runs
`advisor.loadgen.drive.drive` on its shard from one start time on the system's
monotonic clock (`time.perf_counter_ns()` is CLOCK_MONOTONIC on Linux, the
same in every process), and streams its raw records back as they end. The
driver merges them into the list one process would have written, each
stamped with its worker id.

A worker is anything that takes a `Shard`, a start time in its own clock and
an `emit` callback (`run_shard`); here it is a process (`drive_workers`), on
a Ray cluster an actor (`advisor.loadgen.ray_workers`, `--workers ray:N`).
What this does not do: move a crashed worker's load to the others (its
requests become `worker` errors, the others' records are kept), or drive
in-process engines (they keep one driver: one engine, one client).
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from adapters.base import WorkerClient
from adapters.placement import available_cpus
from advisor.loadgen.drive import LoadResult, Progress, cancel_handled
from advisor.loadgen.records import RequestRecord
from advisor.loadgen.worker_process import Shard
from scenarios.types import Schedule, ScheduledRequest

START_MARGIN_S = 0.5  # from "go" to the common start: every worker is in its loop by then
READY_TIMEOUT_S = 120.0  # a worker that has not attached by then is a failed start
STOP_GRACE_S = 30.0  # after "stop": how long workers may take to send what they measured


class WorkerError(RuntimeError):
    """A worker could not start; the message says which and why."""


def shard_key(r: ScheduledRequest) -> tuple[str, int]:
    """Requests with the same key go to the same worker, in schedule order.

    A multi-turn session is one key (turn k's prompt is built from turn k-1's
    answer, in the same process), so it is dealt out whole; any other request is its own.
    """
    return ("session", r.session_id) if r.session_id is not None else ("request", r.idx)


def shard(schedule: Schedule, n: int) -> list[Schedule]:
    """`schedule` dealt out to at most n workers: whole keys round-robin in send order, schedule order kept."""
    assert n >= 1
    reqs = schedule.requests
    order = sorted(range(len(reqs)), key=lambda i: (reqs[i].t_sched_s, i))
    owner: dict[tuple[str, int], int] = {}
    parts: list[list[int]] = [[] for _ in range(n)]
    for i in order:
        key = shard_key(reqs[i])
        if key not in owner:
            owner[key] = len(owner) % n
        parts[owner[key]].append(i)
    users = [len(p) for p in parts]
    closed_users = _closed_users(schedule)
    if closed_users is not None:  # closed loop: the users are dealt out too (a worker gets at least one)
        users = [closed_users // n + (1 if w < closed_users % n else 0) for w in range(n)]
    out = []
    for p, u in zip(parts, users):
        if not p or u <= 0:
            continue
        part = tuple(reqs[i] for i in sorted(p))
        sessions = schedule.sessions
        if sessions is not None:
            sessions = replace(sessions, n_sessions=len({r.session_id for r in part}),
                               users=u if sessions.users is not None else None)
        out.append(replace(schedule, requests=part, sessions=sessions,
                           concurrency=u if schedule.mode == "closed" and schedule.sessions is None
                           else schedule.concurrency))
    return out


def _closed_users(schedule: Schedule) -> int | None:
    """The users of a closed loop (plain or of sessions); None for an open loop."""
    if schedule.sessions is not None:
        return max(1, schedule.sessions.users) if schedule.sessions.users is not None else None
    return max(1, schedule.concurrency or 1) if schedule.mode == "closed" else None


def client_cpus(placement: dict[str, Any] | None) -> list[int]:
    """The CPUs the load generator may use: this process's affinity minus those an engine advisor started is pinned to."""
    engine = set((placement or {}).get("engine_cpus") or ())
    return [c for c in available_cpus() if c not in engine] or list(available_cpus())


# The open-loop rate one worker process held against the zero-work server (benchmarks/history/loadgen.md, "load
# generator": 2,000 req/s in 3 of 4 runs, 16 one-token chunks per request, client on one core). `auto` gives a schedule whose peak stays under a quarter of it one worker: a margin for servers
# that stream each token in a read of its own (every read is work for the client) and for a slower client CPU.
# Above it, and for closed loops (their rate is whatever the server allows), `auto` is one worker per client CPU.
ONE_WORKER_HELD_RPS = 2000.0
AUTO_ONE_WORKER_PEAK_RPS = ONE_WORKER_HELD_RPS / 4


def peak_rps(schedule: Schedule, window_s: float = 1.0) -> float:
    """The most requests the schedule sends in any window of `window_s` (warm-up included), per second."""
    times = sorted(r.t_sched_s for r in schedule.requests)
    most, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] >= window_s - 1e-9:  # (1e-9: times computed as i / rate round either way)
            lo += 1
        most = max(most, hi - lo + 1)
    return most / window_s


def count(requested: int | str, *, served: bool, placement: dict[str, Any] | None, schedule: Schedule,
          auto_cap: int | None = None) -> int:
    """How many workers a run gets: `auto` is one per client CPU for served engines (one where a single process
    has room to spare: an open loop whose peak rate is under AUTO_ONE_WORKER_PEAK_RPS), one driver otherwise;
    `auto_cap` caps `auto` (the CPUs a scheduler such as Ray gave a matrix cell, where affinity does not say)."""
    if not served:
        return 1
    if requested == "auto" and _closed_users(schedule) is None and peak_rps(schedule) <= AUTO_ONE_WORKER_PEAK_RPS:
        return 1
    n = len(client_cpus(placement)) if requested == "auto" else int(requested)
    if requested == "auto" and auto_cap is not None:
        n = min(n, auto_cap)
    keys = len({shard_key(r) for r in schedule.requests})
    users = _closed_users(schedule)
    if users is not None:
        keys = min(keys, users)
    return max(1, min(n, keys))


def pinning(n: int, placement: dict[str, Any] | None) -> list[list[int] | None]:
    """One CPU each when there are exactly as many workers as client CPUs; else they share the client's CPUs."""
    cpus = client_cpus(placement)
    return [[c] for c in cpus] if len(cpus) == n else [None] * n


@dataclass
class _Worker:
    wid: int
    proc: subprocess.Popen[bytes]
    conn: Any  # the driver's end of its pipe
    positions: list[int]  # where its records go in the merged list
    received: set[int]
    report: dict[str, Any] | None = None
    ready: bool = False
    gone: bool = False
    gone_ns: int = 0  # perf_counter_ns when its pipe closed


async def drive_workers(client: WorkerClient, schedule: Schedule, n: int, *, timeout_s: float,
                        max_run_s: float | None, progress: Progress | None = None,
                        cpus: list[list[int] | None] | None = None) -> LoadResult:
    """Run `schedule` on n worker processes; the merged records, as one `drive` would return them.

    Cancelling the task stops every worker; what they measured comes back with `interrupted` set.
    `cpus[w]`: the CPUs worker w is pinned to (None: not pinned).
    """
    loop = asyncio.get_running_loop()
    parts = shard(schedule, n)
    records, pos = blank_records(schedule)
    inbox: asyncio.Queue[tuple[int, tuple[Any, ...]]] = asyncio.Queue()
    workers: list[_Worker] = []
    positions = [[pos[r.idx] for r in part.requests] for part in parts]
    for w, mine_pos in enumerate(positions):
        for k in mine_pos:
            records[k].worker = w
    t0 = 0
    done = 0
    interrupted: str | None = None
    try:
        for w, part in enumerate(parts):
            shard_w = Shard(worker=w, client=client, schedule=part, timeout_s=timeout_s, max_run_s=max_run_s,
                            cpus=(cpus[w] if cpus and w < len(cpus) else None))
            proc, mine = start_worker()
            workers.append(_Worker(w, proc, mine, positions[w], set()))
            threading.Thread(target=_read, args=(mine, w, loop, inbox, shard_w), name=f"advisor-worker-{w}-reader",
                             daemon=True).start()
            await asyncio.sleep(0)  # a Ctrl-C while they start lands here, not after the last one has started
        await _until_ready(workers, inbox)
        t0 = time.perf_counter_ns() + int(START_MARGIN_S * 1e9)
        for wk in workers:
            _send(wk, ("go", t0))
        while not all(wk.gone or wk.report is not None for wk in workers):
            done += _handle(await inbox.get(), workers, records, pos)
            if progress is not None:
                progress(done, len(records))
    except asyncio.CancelledError:
        interrupted = cancel_handled()
        for wk in workers if t0 else ():  # before the start they are killed below (a reader may still be sending)
            _send(wk, ("stop",))
        deadline = loop.time() + (STOP_GRACE_S if t0 else 0.0)
        while not all(wk.gone or wk.report is not None for wk in workers) and loop.time() < deadline:
            try:
                item = await asyncio.wait_for(inbox.get(), max(0.01, deadline - loop.time()))
            except TimeoutError:
                break
            done += _handle(item, workers, records, pos)
    finally:
        for wk in workers:
            if not t0:  # stopped or failed while they start: nothing was sent, nothing to wait for (was 5 s each)
                wk.proc.kill()
            try:
                wk.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                wk.proc.kill()
                wk.proc.wait(timeout=5)
            wk.conn.close()
    for never in positions[len(workers):]:  # workers the interrupt came before: their requests were never sent
        mark_lost(records, never, 0, 0, "not started", stopped=True)
    for wk in workers:
        if wk.report is None:
            _lost(wk, records, t0, stopped=interrupted is not None)
    return gathered(records, t0, interrupted, [wk.report for wk in workers],
                    [_summary(wk, records) for wk in workers])


def gathered(records: list[RequestRecord], t0: int, interrupted: str | None, reports: list[dict[str, Any] | None],
             summaries: list[dict[str, Any]]) -> LoadResult:
    """The run's result from its workers' merged records and reports (processes here, or Ray actors)."""
    interrupted = interrupted or next((rep["interrupted"] for rep in reports if rep and rep.get("interrupted")), None)
    notes = tuple(dict.fromkeys(n for rep in reports if rep for n in rep.get("notes", ())))
    wall_s = (time.perf_counter_ns() - t0) / 1e9 if t0 else 0.0
    n_finished = sum(1 for r in records if r.t_end_ns is not None and r.error_kind not in ("cancelled", "worker"))
    return LoadResult(records, t0 or time.perf_counter_ns(), wall_s, interrupted, n_finished,
                      workers=summaries, notes=notes)


def blank_records(schedule: Schedule) -> tuple[list[RequestRecord], dict[int, int]]:
    """One unsent record per scheduled request (workers fill them in), and each request's position by index."""
    records = [RequestRecord(idx=r.idx, request_id=f"{schedule.scenario}-{r.idx}", t_sched_ns=int(r.t_sched_s * 1e9),
                             n_in_client=r.n_in, max_tokens=r.n_out, warmup=r.warmup, session_id=r.session_id,
                             turn=r.turn if r.session_id is not None else None) for r in schedule.requests]
    return records, {r.idx: k for k, r in enumerate(schedule.requests)}


def start_worker() -> tuple[subprocess.Popen[bytes], Connection]:
    """A worker process (`python -m advisor.loadgen.worker_process`) and the driver's end of its socket.

    A fresh interpreter, never a fork of this one (it runs an event loop and threads), and not
    multiprocessing's spawn either, which re-runs the caller's main script in the child. In a process
    group of its own: a Ctrl-C at the terminal reaches the driver alone, which stops its workers (one
    still importing would otherwise die of it, and the run would end as a failed start instead of 130).
    """
    mine, theirs = socket.socketpair()
    proc = subprocess.Popen([sys.executable, "-m", "advisor.loadgen.worker_process", str(theirs.fileno())],
                            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, process_group=0)
    theirs.close()
    return proc, Connection(mine.detach())


def _read(conn: Any, wid: int, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue, shard_w: Shard) -> None:
    """Reader thread: sends the worker its shard (it blocks until the worker has started to read, so here, not
    on the loop, and every worker starts at once), then its messages into the driver's loop; ("gone",) at EOF."""
    try:
        conn.send(shard_w)
    except (OSError, ValueError):  # killed before it read its shard; recv below says it is gone
        pass
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            msg = ("gone",)
        try:
            loop.call_soon_threadsafe(inbox.put_nowait, (wid, msg))
        except RuntimeError:  # the loop has closed: nobody is listening any more
            return
        if msg[0] in ("gone", "done", "failed"):
            return


def _send(wk: _Worker, msg: tuple[Any, ...]) -> None:
    if not wk.gone:
        try:
            wk.conn.send(msg)
        except (OSError, ValueError):  # the worker is gone; its reader says so
            pass


async def _until_ready(workers: list[_Worker], inbox: asyncio.Queue) -> None:
    """Every worker attached to the engine and built its shard's first requests; else a WorkerError."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_TIMEOUT_S
    while not all(wk.ready for wk in workers):
        try:
            wid, msg = await asyncio.wait_for(inbox.get(), max(0.01, deadline - loop.time()))
        except TimeoutError:
            raise WorkerError(f"load-generator workers did not start within {READY_TIMEOUT_S:g} s") from None
        wk = workers[wid]
        if msg[0] == "ready":
            wk.ready = True
        elif msg[0] == "failed":
            raise WorkerError(f"load-generator worker {wid} could not start: {msg[1]}")
        elif msg[0] == "gone":
            raise WorkerError(f"load-generator worker {wid} exited while starting (exit code {_exit_code(wk)})")


def _handle(item: tuple[int, tuple[Any, ...]], workers: list[_Worker], records: list[RequestRecord],
            pos: dict[int, int]) -> int:
    """One message from a worker; returns how many requests it finished."""
    wid, msg = item
    wk = workers[wid]
    finished = 0
    if msg[0] == "records":
        for rec in msg[1]:
            k = pos[rec.idx]
            records[k] = rec
            wk.received.add(k)
            if rec.error_kind != "cancelled":
                finished += 1
    elif msg[0] == "done":
        wk.report = msg[1]
    elif msg[0] == "gone":
        wk.gone, wk.gone_ns = True, time.perf_counter_ns()
    return finished


def _lost(wk: _Worker, records: list[RequestRecord], t0: int, stopped: bool) -> None:
    """A worker that ended without its report: every request it did not return is a `worker` error.

    Those due before it died were due or in flight; the later ones were never sent. A worker that
    was stopped before the start (the run was interrupted) sent nothing: its requests are `cancelled`.
    """
    code = _exit_code(wk)
    mark_lost(records, [k for k in wk.positions if k not in wk.received], t0, wk.gone_ns,
              f"load-generator worker {wk.wid} died (exit code {code})", stopped)
    wk.report = {"worker": wk.wid, "pid": wk.proc.pid, "exit": f"died (exit code {code})", "cpu_s": None,
                 "n_requests": len(wk.positions), "interrupted": None}


def mark_lost(records: list[RequestRecord], lost: list[int], t0: int, gone_ns: int, why: str, stopped: bool) -> None:
    """The requests (positions `lost`) of a worker that died at `gone_ns` (perf_counter_ns here; 0: unknown).

    Those due before it died were due or in flight; the later ones were never sent. A worker that
    was stopped before the start (`t0` 0: the run was interrupted first) sent nothing: `cancelled`.
    """
    died_ns = (gone_ns or time.perf_counter_ns()) - t0 if t0 else -1
    for k in lost:
        rec = records[k]
        if died_ns < 0 and stopped:
            rec.error_kind, rec.error = "cancelled", "never sent: the run stopped first"
        elif rec.t_sched_ns <= died_ns:
            rec.error_kind, rec.error = "worker", f"{why} while this request was due or in flight"
            rec.t_end_ns = died_ns
        else:
            rec.error_kind, rec.error = "worker", f"never sent: {why} first"


def _exit_code(wk: _Worker) -> int | None:
    try:
        return wk.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        return None


def _summary(wk: _Worker, records: list[RequestRecord]) -> dict[str, Any]:
    """What the result says about one worker: its requests, CPU and send lag."""
    rep = dict(wk.report or {})
    rep.pop("notes", None)
    mine = [records[k] for k in wk.positions]
    return {**rep, **lag_and_cpu(mine, rep.get("cpu_s"))}


def lag_and_cpu(records: list[RequestRecord], cpu_s: float | None) -> dict[str, Any]:
    """Send-lag p50/p99 (ms) over measured sends, and CPU per request, for one driver or worker."""
    lags = np.array([(r.t_send_ns - r.t_sched_ns) / 1e6 for r in records if r.t_send_ns is not None and not r.warmup])
    sent = sum(1 for r in records if r.t_send_ns is not None)
    waits = [r.client_wait_ns for r in records if r.client_wait_ns is not None]
    return {"n_sent": sent,
            # the sending thread's run-queue time over its sends' waits (advisor.loadgen.cpu_wait)
            "client_wait_ms": round(sum(waits) / 1e6, 3) if waits else None,
            "lag_p50_ms": round(float(np.percentile(lags, 50)), 4) if lags.size else None,
            "lag_p99_ms": round(float(np.percentile(lags, 99)), 4) if lags.size else None,
            "cpu_ms_per_request": round(cpu_s / sent * 1e3, 4) if cpu_s is not None and sent else None}

