"""An attribution experiment for `serving_overhead.py --client-poll-us N`, not a product setting.

The served engine hands each step's tokens to the client in one socket write. When the client's event loop
sleeps in epoll, that write must wake it: on a VM the wake is an inter-processor interrupt and a VM exit, paid on
the engine's CPU inside the write (`sendall` with a sleeping reader: ~18 us here, against ~3 us when the reader
is awake; `benchmarks/busy_poll.py --wake` measures it; after a pass over 4 MiB, about what tiny's forward reads
(3.5 MB of weights), the same write takes ~47 us, the kernel's and the VM exit's paths then running from cold
caches: `--stream-mb 0,4`). With `install(N)` the client's loop polls its sockets
(epoll with no wait) for up to N us before it blocks, so a step that ends within N us of the last one finds the
client awake and its write wakes nobody. If the served/core gap closes with it, the gap was the wake.

The client then burns its CPU (it has its own under `advisor bench`'s placement), so its CPU share is no longer
a figure of the load generator's work: the experiment says where the engine's time went, nothing more.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import selectors
import socket
import time
from typing import Any


class BusyPollSelector(selectors.EpollSelector):
    """epoll that spins (no-wait polls) for up to `poll_s` before each blocking wait."""

    def __init__(self, poll_s: float) -> None:
        super().__init__()
        self.poll_s = poll_s

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        end = time.perf_counter() + (self.poll_s if timeout is None else min(self.poll_s, timeout))
        while time.perf_counter() < end:
            ready = super().select(0)
            if ready:
                return ready
        if timeout is not None:
            timeout = max(0.0, timeout - self.poll_s)
        return super().select(timeout)


def install(poll_us: float) -> None:
    """Make advisor's load generator drive its run on an asyncio loop with a busy-polling selector."""
    from advisor.loadgen import eventloop

    def run(coro: Any) -> Any:
        with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(BusyPollSelector(poll_us / 1e6))) as r:
            return r.run(coro)

    eventloop.run = run
    eventloop.name = lambda: f"asyncio, busy-poll {poll_us:g} us (benchmarks/busy_poll.py)"


def wake_cost(n: int = 3000, stream_mb: float = 0.0) -> dict[str, float]:
    """Median `sendall` of one small message to a reader on another CPU: asleep in recv, and spinning.

    Between writes the writer works for half a millisecond, as a tiny step does: it spins, or with
    `stream_mb` it first reads that many MiB (as a forward pass reads its weights), which leaves the write's
    kernel path, and on a VM the host's exit path, to run from cold caches.
    """
    import numpy as np

    out = {}
    cpus = sorted(os.sched_getaffinity(0))
    weights = np.ones(int(stream_mb * 2**20 / 8)) if stream_mb else None
    for mode in ("asleep", "spinning"):
        a, b = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the reader, on the first CPU
            os.sched_setaffinity(0, {cpus[0]})
            a.close()
            b.setblocking(mode == "asleep")
            while True:
                try:
                    if not b.recv(1 << 16):
                        os._exit(0)
                except BlockingIOError:
                    pass
        os.sched_setaffinity(0, {cpus[-1]})
        b.close()
        times = []
        for _ in range(n):
            t = time.perf_counter_ns() + 500_000
            if weights is not None:
                weights.sum()
            while time.perf_counter_ns() < t:  # half a millisecond of work between writes, as a tiny step
                pass
            t0 = time.perf_counter_ns()
            a.sendall(b"x" * 64)
            times.append(time.perf_counter_ns() - t0)
        a.close()
        os.waitpid(pid, 0)
        times.sort()
        out[f"sendall_us_reader_{mode}"] = round(times[n // 2] / 1e3, 2)
    os.sched_setaffinity(0, set(cpus))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wake", action="store_true", help="measure a socket write's cost with the reader asleep and awake")
    ap.add_argument("--stream-mb", default=None, help="with --wake, comma-separated: MiB read between writes "
                    "(0: spin only; default 0)")
    args = ap.parse_args()
    if args.stream_mb is not None and not args.wake:
        ap.error("--stream-mb goes with --wake")
    if args.wake:
        for mb in (float(x) for x in (args.stream_mb or "0").split(",")):
            print({"stream_mb": mb, **wake_cost(stream_mb=mb)})
