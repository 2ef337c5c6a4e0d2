"""`--workers ray:N`: one schedule sharded over N Ray actors on a cluster's nodes, one common start, records merged.

The same sharding as local workers (`advisor.loadgen.workers.shard`). Each shard goes to a `LoadActor`
(`advisor.loadgen.ray_actor`), placed with Ray's SPREAD strategy (one CPU each) so the actors land on as
many nodes as the cluster has. Every node's monotonic clock counts from its own boot, so the
driver measures each actor's clock offset (`advisor.loadgen.clock_sync`: round trips, the smallest RTT
kept), picks one start time t0 in its own clock and sends each actor t0 + its offset. An actor's
records are relative to its start, which is t0 in the driver's clock; so they are the driver's
times relative to t0 already, off by at most the offset's uncertainty (half the best round trip),
and are merged as they are. Each worker's offset, uncertainty and the drift between the
measurements before and after the run are in its report (`load.workers`).

Records come back in batches while the run goes on (the driver polls every actor). Cancelling
the task (Ctrl-C, SIGTERM) stops every actor and keeps what they measured. An actor that dies
(its node or process gone) loses the requests it had not returned: they become `worker` errors,
as with a local worker that dies. Only served engines: the engine URL must be reachable from
every node the actors may land on. Joining the cluster is `advisor.matrix.ray_connect`'s, as for the matrix.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from adapters.base import WorkerClient
from advisor.loadgen import clock_sync
from advisor.loadgen.clock_sync import ClockOffset
from advisor.loadgen.drive import LoadResult, Progress, cancel_handled
from advisor.loadgen.records import RequestRecord
from advisor.loadgen.worker_process import Shard
from advisor.loadgen.workers import WorkerError, blank_records, gathered, lag_and_cpu, mark_lost, shard
from advisor.matrix.ray_connect import RayConnectError, check_reachable, import_ray
from advisor.matrix.ray_connect import connect as ray_connect
from scenarios.types import Schedule

START_MARGIN_S = 1.0  # from "go" to the common start: every actor has its start time by then
READY_TIMEOUT_S = 120.0  # actors placed and attached by then, else the run fails before it starts
POLL_S = 0.1  # how often the driver collects records
STOP_GRACE_S = 30.0
SKEW_ENV = "ADVISOR_TEST_RAY_CLOCK_SKEW"  # tests only: "W:NS" adds NS to worker W's clock readings


def require_ray() -> ModuleType:
    """The ray module, else one line saying what to install."""
    try:
        return import_ray("--workers ray:N")
    except RayConnectError as e:
        raise WorkerError(str(e)) from None


def preflight(address: str | None) -> None:
    """Ray installed and, where an address is given (or in RAY_ADDRESS), that cluster reachable; cheap, no init."""
    require_ray()
    given = address if address not in (None, "auto") else os.environ.get("RAY_ADDRESS")
    if given and given != "auto":
        try:
            check_reachable(given)
        except RayConnectError as e:
            raise WorkerError(str(e)) from None


def connect(address: str | None) -> ModuleType:
    """The ray module, connected: a cluster this process already joined (a matrix cell on Ray), else `address`."""
    ray = require_ray()
    _ray_messages_to_stderr()
    if ray.is_initialized():
        return ray
    try:
        return ray_connect(address or "auto", lambda msg: print(f"advisor: {msg}", file=sys.stderr),
                           purpose="the run")
    except RayConnectError as e:
        raise WorkerError(str(e)) from None


def _ray_messages_to_stderr() -> None:
    """Ray prints cluster errors ("Raylet is terminated" when a node dies) on the driver's stdout; stdout is for
    results (`--json`), so they go to stderr. Ray's printer is private: if it moved, nothing changes."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        return
    printer = getattr(ray_worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "advisor_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        printer({**data, "is_err": True}, ignore_prefix)

    to_stderr.advisor_stderr = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = to_stderr


def skews_for_tests(env: dict[str, str] | None = None) -> dict[int, int]:
    """Worker -> clock skew (ns) from ADVISOR_TEST_RAY_CLOCK_SKEW ("1:5000000000,2:-3000000"); tests only."""
    text = (env if env is not None else os.environ).get(SKEW_ENV, "").strip()
    out: dict[int, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        w, _, ns = part.partition(":")
        out[int(w)] = int(ns)
    return out


@dataclass
class _Actor:
    wid: int
    handle: Any
    positions: list[int]
    where: dict[str, Any] = field(default_factory=dict)
    clock: ClockOffset | None = None
    clock_after: ClockOffset | None = None
    received: set[int] = field(default_factory=set)
    report: dict[str, Any] | None = None
    gone_ns: int = 0
    why_gone: str | None = None


async def drive_ray_workers(client: WorkerClient, schedule: Schedule, n: int, *, address: str | None,
                            timeout_s: float, max_run_s: float | None,
                            progress: Progress | None = None) -> LoadResult:
    """Run `schedule` on n Ray actors; the merged records, as one `drive` would return them."""
    ray = await asyncio.to_thread(connect, address)
    from advisor.loadgen.ray_actor import LoadActor

    cls = ray.remote(LoadActor)
    records, pos = blank_records(schedule)
    skew = skews_for_tests()
    actors: list[_Actor] = []
    for w, part in enumerate(shard(schedule, n)):
        sh = Shard(worker=w, client=client, schedule=part, timeout_s=timeout_s, max_run_s=max_run_s)
        handle = cls.options(num_cpus=1, scheduling_strategy="SPREAD", max_restarts=0,
                             max_concurrency=4).remote(sh, skew.get(w, 0))
        positions = [pos[r.idx] for r in part.requests]
        for k in positions:
            records[k].worker = w
        actors.append(_Actor(w, handle, positions))
    t0 = 0
    done = 0
    interrupted: str | None = None
    try:
        await asyncio.to_thread(_until_ready, ray, actors)
        for a in actors:  # one at a time: each measurement has the driver to itself
            a.clock = await asyncio.to_thread(_measure, ray, a)
        t0 = time.perf_counter_ns() + int(START_MARGIN_S * 1e9)
        await asyncio.to_thread(ray.get, [a.handle.go.remote(a.clock.to_worker(t0)) for a in actors if a.clock])
        while not all(a.report is not None or a.gone_ns for a in actors):
            await asyncio.sleep(POLL_S)
            done += await asyncio.to_thread(_poll, ray, actors, records, pos)
            if progress is not None:
                progress(done, len(records))
    except asyncio.CancelledError:
        interrupted = cancel_handled()
        await asyncio.to_thread(_stop, ray, actors, records, pos)
    finally:
        await asyncio.to_thread(_end, ray, actors)
    return _merge(actors, records, t0, interrupted)


def _until_ready(ray: Any, actors: list[_Actor]) -> None:
    refs = [a.handle.ready.remote() for a in actors]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=READY_TIMEOUT_S)
    if len(ready) < len(refs):
        cpus = ray.cluster_resources().get("CPU", 0)
        raise WorkerError(f"{len(refs) - len(ready)} of {len(refs)} Ray load-generator actors were not placed within "
                          f"{READY_TIMEOUT_S:g} s (each needs 1 CPU; the cluster has {cpus:g} in all)")
    for a, ref in zip(actors, refs):
        try:
            a.where = ray.get(ref)
        except ray.exceptions.RayError as e:
            raise WorkerError(f"Ray load-generator worker {a.wid} could not start: {_first_line(e)}") from None
        if a.where.get("failed"):
            raise WorkerError(f"Ray load-generator worker {a.wid} on {a.where.get('host')} could not start: "
                              f"{a.where['failed']}")


def _measure(ray: Any, a: _Actor) -> ClockOffset | None:
    try:
        return clock_sync.measure(lambda: ray.get(a.handle.now_ns.remote()))
    except ray.exceptions.RayError as e:
        a.gone_ns, a.why_gone = a.gone_ns or time.perf_counter_ns(), _first_line(e)
        return None


def _poll(ray: Any, actors: list[_Actor], records: list[RequestRecord], pos: dict[int, int]) -> int:
    """Collect every running actor's new records; returns how many requests they finished."""
    live = [a for a in actors if a.report is None and not a.gone_ns]
    refs = [a.handle.poll.remote() for a in live]
    finished = 0
    for a, ref in zip(live, refs):
        try:
            batch, report = ray.get(ref)
        except ray.exceptions.RayError as e:  # the actor, its process or its node died
            a.gone_ns, a.why_gone = time.perf_counter_ns(), _first_line(e)
            continue
        for rec in batch:
            k = pos[rec.idx]
            records[k] = rec
            a.received.add(k)
            finished += rec.error_kind != "cancelled"
        if report is not None:
            a.report = report
    return finished


def _stop(ray: Any, actors: list[_Actor], records: list[RequestRecord], pos: dict[int, int]) -> None:
    for a in actors:
        if a.report is None and not a.gone_ns:
            a.handle.stop.remote()
    deadline = time.monotonic() + STOP_GRACE_S
    while not all(a.report is not None or a.gone_ns for a in actors) and time.monotonic() < deadline:
        _poll(ray, actors, records, pos)
        time.sleep(POLL_S)


def _end(ray: Any, actors: list[_Actor]) -> None:
    """The clocks once more (drift over the run), then every actor ends."""
    for a in actors:
        if a.clock is not None and a.report is not None and not a.gone_ns:
            a.clock_after = _measure(ray, a)
        ray.kill(a.handle, no_restart=True)


def _merge(actors: list[_Actor], records: list[RequestRecord], t0: int, interrupted: str | None) -> LoadResult:
    for a in actors:
        lost = [k for k in a.positions if k not in a.received]
        host = a.where.get("host", "?")
        if a.report is None:
            why = f"Ray load-generator worker {a.wid} on {host} died ({a.why_gone or 'gone'})"
            mark_lost(records, lost, t0, a.gone_ns, why, stopped=interrupted is not None)
            a.report = {"worker": a.wid, "pid": a.where.get("pid"), "host": a.where.get("host"),
                        "exit": f"died: {a.why_gone or 'no report'}", "cpu_s": None, "n_requests": len(a.positions),
                        "interrupted": None}
        elif lost and a.report.get("exit") != "done":  # its run failed: what it had not returned is lost
            mark_lost(records, lost, t0, 0, f"Ray load-generator worker {a.wid} on {host} {a.report['exit']}",
                      stopped=interrupted is not None)
        elif lost:  # stopped before its run began: nothing was sent
            mark_lost(records, lost, 0, 0, "", stopped=True)
    return gathered(records, t0, interrupted, [a.report for a in actors], [_summary(a, records) for a in actors])


def _summary(a: _Actor, records: list[RequestRecord]) -> dict[str, Any]:
    """One actor's report: where it ran, its clock against the driver's, its requests, CPU and send lag."""
    rep = {k: v for k, v in (a.report or {}).items() if k != "notes"}
    rep.update(on="ray", node=a.where.get("node"), ip=a.where.get("ip"))
    if a.clock is not None:
        rep.update(a.clock.report())
    if a.clock is not None and a.clock_after is not None:
        rep["clock_drift_ms"] = round((a.clock_after.offset_ns - a.clock.offset_ns) / 1e6, 4)
    mine = [records[k] for k in a.positions]
    return {**rep, **lag_and_cpu(mine, rep.get("cpu_s"))}


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__
