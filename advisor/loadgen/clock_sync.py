"""A remote worker's monotonic clock against the driver's: offset and uncertainty from round trips (NTP-style).

Every host's `time.perf_counter_ns()` (CLOCK_MONOTONIC) counts from its own boot, so a time
read on another host means nothing here until it is translated. The driver asks the worker
for its clock several times: it reads its own clock when it sends (t_send) and when the answer
is back (t_recv), the worker reads its clock in between (t_worker). Whatever the delays each
way, the worker's reading was taken somewhere inside [t_send, t_recv], so

    offset      = t_worker - (t_send + t_recv) / 2     (worker clock minus driver clock)
    uncertainty = (t_recv - t_send) / 2                 (the true offset is within offset +- this)

and the round trip with the smallest RTT gives the tightest bound (it waited least in queues).
A time t on the worker is t - offset on the driver; a driver time t is t + offset on the worker.
The offset is measured once before the start and once after the end: the difference is how
far the two clocks drifted apart during the run (reported, not corrected).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

ROUND_TRIPS = 8  # per measurement; the smallest RTT is kept


@dataclass(frozen=True)
class ClockOffset:
    offset_ns: int  # worker clock - driver clock
    uncertainty_ns: int  # the true offset is within offset_ns +- this (half the best round trip)
    rtt_ns: int  # the best round trip
    samples: int  # round trips measured

    def to_worker(self, t_driver_ns: int) -> int:
        return t_driver_ns + self.offset_ns

    def to_driver(self, t_worker_ns: int) -> int:
        return t_worker_ns - self.offset_ns

    def report(self) -> dict[str, float | int]:
        """For the per-worker report (`load.workers`): offset in ns, the rest in ms."""
        return {"clock_offset_ns": self.offset_ns, "clock_uncertainty_ms": round(self.uncertainty_ns / 1e6, 4),
                "clock_rtt_ms": round(self.rtt_ns / 1e6, 4)}


def estimate(samples: Sequence[tuple[int, int, int]]) -> ClockOffset:
    """The offset from (t_send, t_worker, t_recv) round trips (driver, worker, driver clocks): the best RTT's."""
    if not samples:
        raise ValueError("no round trips to estimate a clock offset from")
    for t_send, _, t_recv in samples:
        if t_recv < t_send:
            raise ValueError(f"a round trip ends before it starts ({t_send} > {t_recv}): not one monotonic clock")
    t_send, t_worker, t_recv = min(samples, key=lambda s: s[2] - s[0])
    rtt = t_recv - t_send
    # integer midpoint without overflow worries (Python ints) and without float rounding on ~1e18 values
    return ClockOffset(offset_ns=t_worker - (t_send + t_recv) // 2, uncertainty_ns=(rtt + 1) // 2, rtt_ns=rtt,
                       samples=len(samples))


def measure(read_worker_ns: Callable[[], int], n: int = ROUND_TRIPS,
            now_ns: Callable[[], int] = time.perf_counter_ns) -> ClockOffset:
    """Measure by calling `read_worker_ns()` (a blocking round trip to the worker) n times."""
    samples = []
    for _ in range(n):
        t_send = now_ns()
        t_worker = read_worker_ns()
        samples.append((t_send, t_worker, now_ns()))
    return estimate(samples)
