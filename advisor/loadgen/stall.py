"""A run waiting on requests with nothing arriving: one line now and then, so a hung server is not silence.

With the default 600 s timeout a server that never answers gave no sign for ten minutes. `watch` wakes every
`every_s`; when requests are open and no chunk arrived and no request ended since its last wake, it hands a
`Stall` (how many are open, how long nothing arrived, how long the oldest has waited, the timeout) to `say`:
at most one line per `every_s`. It reads what `drive` keeps anyway (the open requests, in send order, and a
count of arrivals) and adds no work per chunk. It prints nothing itself; `print_stall` writes the line to
stderr, never stdout (where `--json` prints its document).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from advisor.loadgen.records import RequestRecord

EVERY_S = 10.0  # quiet seconds before a line, and the least time between two lines


@dataclass(frozen=True)
class Stall:
    n_open: int  # requests sent and not ended
    quiet_s: float  # since the last chunk or the last request that ended
    oldest_wait_s: float  # since the oldest open request was sent
    timeout_s: float  # per request (--timeout)

    def text(self) -> str:
        many = "s" if self.n_open != 1 else ""
        return (f"waiting on {self.n_open} request{many}: nothing has arrived for {self.quiet_s:.0f} s; the oldest "
                f"was sent {self.oldest_wait_s:.0f} s ago (each is given up after --timeout {self.timeout_s:g} s)")


def print_stall(stall: Stall) -> None:
    """The line on stderr (a rich progress bar on a terminal shows it above the bar)."""
    print(stall.text(), file=sys.stderr, flush=True)


async def watch(open_requests: dict[int, RequestRecord], arrivals: Callable[[], int], t0_ns: int, timeout_s: float,
                say: Callable[[Stall], None], every_s: float = EVERY_S) -> None:
    """Until cancelled: every `every_s`, a `Stall` to `say` while requests are open and `arrivals()` has not moved.

    `open_requests` holds the requests in flight in the order they were sent (the first is the oldest);
    `arrivals()` is a count that grows with every chunk and every ended request.
    """
    assert every_s > 0
    seen, quiet_since = arrivals(), time.perf_counter_ns()
    while True:
        await asyncio.sleep(every_s)
        now, count = time.perf_counter_ns(), arrivals()
        if count != seen or not open_requests:
            seen, quiet_since = count, now
            continue
        oldest = next(iter(open_requests.values()))
        sent_ns = oldest.t_send_ns if oldest.t_send_ns is not None else now - t0_ns
        say(Stall(len(open_requests), (now - quiet_since) / 1e9, (now - t0_ns - sent_ns) / 1e9, timeout_s))
