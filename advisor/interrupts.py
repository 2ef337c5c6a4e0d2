"""Signals that stop advisor: SIGINT (Ctrl-C), SIGTERM and SIGHUP, handled the same way.

`install()` (called by the CLI, never on import) routes all three here.
While a run is measuring (`cancelling(task, loop)`), a signal cancels that
run's load generator, which then saves what it measured as a partial run;
the caller sees `RunResult.interrupted_by` and raises `Interrupted` after
the save. Outside a run (engine start, a server's health wait) a signal
raises `Interrupted` at once, so `finally` blocks and context managers stop
engines and launched servers on the way out. A second signal while the
first is being handled raises at once. Exit codes are 128 + the signal
number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """advisor was told to stop by a signal; `exit_code` is what the process should end with."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


@dataclass
class _Active:
    task: asyncio.Task
    loop: asyncio.AbstractEventLoop
    signum: int | None = None


_active: list[_Active] = []
_last: list[int] = []  # the last signal handled, for callers whose KeyboardInterrupt lost it


def _handler(signum: int, frame: object) -> None:
    _last[:] = [signum]
    if _active and _active[-1].signum is None:
        run = _active[-1]
        run.signum = signum
        run.loop.call_soon_threadsafe(run.task.cancel)
        return
    raise Interrupted(signum)


def install() -> None:
    """Route SIGINT, SIGTERM and SIGHUP to advisor's handler (main thread only; a no-op elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        signal.signal(sig, _handler)


def installed() -> bool:
    return signal.getsignal(signal.SIGTERM) is _handler


@contextlib.contextmanager
def cancelling(task: asyncio.Task, loop: asyncio.AbstractEventLoop) -> Iterator[_Active]:
    """While inside, a signal cancels `task` instead of raising; `.signum` tells which signal came."""
    run = _Active(task, loop)
    _active.append(run)
    try:
        yield run
    finally:
        _active.remove(run)


def exit_code(e: KeyboardInterrupt) -> int:
    """128 + the signal that stopped advisor: from `e` itself, or the last one handled when a library
    re-raised a plain KeyboardInterrupt (Ray turns one raised inside `ray.wait` into a new one); else 130."""
    if isinstance(e, Interrupted):
        return e.exit_code
    return 128 + _last[0] if _last else 130
