"""One load-generator worker as a Ray actor: attach to the served engine, drive a shard, hand records back in batches.

The driver (`advisor.loadgen.ray_workers`) creates one `LoadActor` per shard; the actor attaches to the
engine from its node (`adapters.attach`, no launch, no warm-up) and builds its first prompts in
its constructor. Then the driver reads the actor's clock a few times (`now_ns`, for
`advisor.loadgen.clock_sync`), sends the common start time translated into the actor's clock (`go`), and
polls (`poll`) for the records `run_shard` emitted since the last poll, until the actor's report
comes with them. `stop` cancels the run; what was measured still comes back through `poll`.

The run happens on a thread of its own (its own event loop), so `now_ns`, `poll` and `stop` are
answered while it goes on. Imported by reference on the nodes: advisor must be installed there.

`clock_skew_ns` is for tests only: it adds that much to every `time.perf_counter_ns()` reading in
the actor's process, as if the actor ran on a host whose monotonic clock started at another time.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from typing import Any

from advisor.loadgen.records import RequestRecord
from advisor.loadgen.worker_process import Shard


def skew_clock(skew_ns: int) -> None:
    """Shift this process's `time.perf_counter_ns()` by skew_ns (tests: a host with another clock)."""
    real = time.perf_counter_ns
    if getattr(real, "advisor_skew_ns", None) is not None:
        real = real.__wrapped__  # type: ignore[attr-defined]

    def skewed() -> int:
        return real() + skew_ns

    skewed.advisor_skew_ns = skew_ns  # type: ignore[attr-defined]
    skewed.__wrapped__ = real  # type: ignore[attr-defined]
    time.perf_counter_ns = skewed


class LoadActor:
    """A worker on some node of the cluster (wrapped with `ray.remote` by the driver)."""

    def __init__(self, shard: Shard, clock_skew_ns: int = 0) -> None:
        if clock_skew_ns:
            skew_clock(clock_skew_ns)
        self.shard = shard
        self._lock = threading.Lock()
        self._out: list[RequestRecord] = []
        self._report: dict[str, Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._stopped = False
        self.failed: str | None = None
        try:
            from adapters import attach
            from advisor.loadgen import eventloop
            from advisor.loadgen.spec_source import spec_source

            self.adapter = attach(shard.client)
            self.specs = spec_source(shard.schedule, shard.client.info, self.adapter)
            if shard.schedule.requests and shard.schedule.sessions is None:
                self.specs(0)  # pay for prompt building's imports and caches now, not at the first send
            eventloop.name()
        except Exception as e:  # the driver names the worker and stops the run before it starts
            self.failed = f"{type(e).__name__}: {e}"

    def ready(self) -> dict[str, Any]:
        """Where the actor runs, and why it cannot run if it cannot."""
        import ray

        ctx = ray.get_runtime_context()
        return {"failed": self.failed, "node": ctx.get_node_id(), "host": socket.gethostname(),
                "ip": ray.util.get_node_ip_address(), "pid": os.getpid()}

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    def go(self, start_ns: int) -> None:
        """Start the shard at start_ns (this actor's clock) on a thread; returns at once."""
        threading.Thread(target=self._run, args=(start_ns,), name="advisor-ray-worker", daemon=True).start()

    def poll(self) -> tuple[list[RequestRecord], dict[str, Any] | None]:
        """The records emitted since the last poll, and the report once the run has ended (None before)."""
        with self._lock:
            out, self._out = self._out, []
            return out, self._report

    def stop(self) -> None:
        """Cancel the run (or keep it from starting); its records and report still come through `poll`."""
        with self._lock:
            self._stopped = True
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the run already ended and its loop closed
                pass

    def _emit(self, batch: list[RequestRecord]) -> None:
        with self._lock:
            self._out.extend(batch)

    def _run(self, start_ns: int) -> None:
        from advisor.loadgen import eventloop

        cpu0, wall0 = time.process_time(), time.perf_counter()
        report: dict[str, Any] = {"worker": self.shard.worker, "pid": os.getpid(), "host": socket.gethostname(),
                                  "n_requests": len(self.shard.schedule.requests)}
        try:
            result = eventloop.run(self._main(start_ns))
            report.update(exit="done", n_finished=result.n_finished, interrupted=result.interrupted,
                          event_loop=eventloop.name(), notes=list(self.adapter.notes))
        except Exception as e:  # the driver turns its unreturned requests into `worker` errors
            report.update(exit=f"failed: {type(e).__name__}: {e}", n_finished=None, interrupted=None)
        report.update(cpu_s=round(time.process_time() - cpu0, 4), wall_s=round(time.perf_counter() - wall0, 4))
        with self._lock:
            self._report = report

    async def _main(self, start_ns: int) -> Any:
        from advisor.loadgen.drive import LoadResult
        from advisor.loadgen.worker_process import run_shard

        with self._lock:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.create_task(run_shard(self.shard, self.adapter, self.specs, start_ns, self._emit))
            if self._stopped:
                self._task.cancel()
        try:
            return await self._task
        except asyncio.CancelledError:  # cancelled before drive() began: nothing was sent
            return LoadResult([], start_ns, 0.0, "interrupted", 0)
