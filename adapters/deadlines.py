"""Per-request timeouts for a load generator: one timer for all requests, not one each.

`asyncio.timeout()` costs a context manager, a timer handle and its
cancellation per use: at 2,000 requests a second, two of them per request were
~6% of the client's core. Every request of a run gets the same timeout, so
deadlines fall due in the order they were set: a FIFO holds them and one timer,
armed for the oldest one still pending, fires each when due (on time: the
timer follows the oldest pending deadline, not a polling period). Finished
requests are dropped from the front as new ones are added, so the FIFO holds
only what is in flight (plus any finished behind one that is still running).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

# an entry is [deadline (loop.time()), item, state]
PENDING, DONE, EXPIRED = 0, 1, 2
# a deadline this close is due: the loop's clock (uvloop's) ticks in milliseconds, and a timer may fire that early
_EARLY_S = 1e-3


class Deadlines:
    """`add(item)` sets a deadline `after_s` from now; `on_expire(item)` runs when one passes while still pending.

    Mark an entry finished with `done(entry)` (or set `entry[2] = DONE`); `entry[2] == EXPIRED` says its deadline
    passed. Bound to the running loop that made it.
    """

    __slots__ = ("after_s", "_on_expire", "_loop", "_fifo", "_timer")

    def __init__(self, after_s: float, on_expire: Callable[[Any], None]) -> None:
        if not after_s > 0:
            raise ValueError(f"a timeout must be > 0 s, got {after_s}")
        self.after_s = after_s
        self._on_expire = on_expire
        self._loop = asyncio.get_running_loop()
        self._fifo: deque[list[Any]] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def add(self, item: Any) -> list[Any]:
        """A new pending deadline for `item`; returns its entry."""
        loop = self._loop
        entry = [loop.time() + self.after_s, item, PENDING]
        fifo = self._fifo
        while fifo and fifo[0][2] != PENDING:
            fifo.popleft()
        fifo.append(entry)
        if self._timer is None:
            self._timer = loop.call_at(fifo[0][0], self._fire)
        return entry

    @staticmethod
    def done(entry: list[Any]) -> None:
        if entry[2] == PENDING:
            entry[2] = DONE

    def _fire(self) -> None:
        self._timer = None
        now = self._loop.time() + _EARLY_S
        fifo = self._fifo
        while fifo:
            entry = fifo[0]
            if entry[2] == PENDING:
                if entry[0] > now:
                    break
                entry[2] = EXPIRED
                fifo.popleft()
                self._on_expire(entry[1])
            else:
                fifo.popleft()
        if fifo and self._timer is None:  # on_expire may have added one (and armed the timer)
            self._timer = self._loop.call_at(fifo[0][0], self._fire)

    def pending(self) -> int:
        """Deadlines not yet finished nor passed."""
        return sum(1 for e in self._fifo if e[2] == PENDING)

    def close(self) -> None:
        """Forget every deadline; none fires after this."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._fifo.clear()
