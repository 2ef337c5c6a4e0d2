"""Signals that stop advisor: SIGINT (Ctrl-C), SIGTERM and SIGHUP, handled the same way.

`install()` (called by the CLI, never on import) routes all three here.
While a run is measuring (`cancelling(task, loop)`), a signal cancels that
run's load generator, which then saves what it measured as a partial run;
the caller sees `RunResult.interrupted_by` and raises `Interrupted` after
the save. Outside a run (engine start, a server's health wait) a signal
raises `Interrupted` at once, so `finally` blocks and context managers stop
engines and launched servers on the way out. Exit codes are 128 + the
signal number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.

A run is saved exactly once, whatever happens (`guarded`): once measuring
has begun, a further signal waits for the save (the console says so), and
only another one within `GRACE_S` of it forces the exit, as `SaveDropped`,
whose message says that the save was dropped. A first signal that comes
after the measurement ended, while the run is being summarized or saved,
lets the save finish and then stops advisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_S = 2.0  # a signal within this long of a waiting one forces the exit and drops the save


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


class SaveDropped(Interrupted):
    """A signal within the grace period after a waiting one forced the exit: the save was dropped."""

    def __init__(self, signum: int, what: str) -> None:
        super().__init__(signum)
        self.what = what


@dataclass
class _Active:
    task: asyncio.Task
    loop: asyncio.AbstractEventLoop
    signum: int | None = None


@dataclass
class _Guard:
    what: str  # what is being saved, for the console ("the run")
    armed: bool = False  # measuring has begun: from now on a signal never drops what was measured
    stop: int | None = None  # the signal that stopped the run (or came while it was being saved)
    waited_at: float | None = None  # when the last signal that waits for the save came


_active: list[_Active] = []
_guards: list[_Guard] = []
_last: list[int] = []  # the last signal handled, for callers whose KeyboardInterrupt lost it


def _say(line: str) -> None:
    """One console line from a signal handler (os.write: never a buffered stream mid-write)."""
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode())


def _handler(signum: int, frame: object) -> None:
    _last[:] = [signum]
    guard = _guards[-1] if _guards else None
    if _active and _active[-1].signum is None:
        run = _active[-1]
        run.signum = signum
        if guard is not None:
            guard.stop = signum
        run.loop.call_soon_threadsafe(run.task.cancel)
        return
    if guard is None or not guard.armed:
        raise Interrupted(signum)
    name = signal.Signals(signum).name
    if guard.stop is None:  # the measurement is over: save it, then stop
        guard.stop = signum
        _say(f"{name}: saving {guard.what} first, then stopping")
        return
    now = time.monotonic()
    if guard.waited_at is not None and now - guard.waited_at <= GRACE_S:
        raise SaveDropped(signum, guard.what)
    guard.waited_at = now
    _say(f"{name}: waiting for the save of {guard.what} to finish; another signal within {GRACE_S:g} s drops the "
         "save and exits now")


@contextlib.contextmanager
def guarded(what: str, stopped_by: int | None = None, armed: bool = False) -> Iterator[_Guard]:
    """A save that a second signal waits for. `stopped_by`: the signal that already stopped the work
    (its save is under way); `armed`: measuring is over or under way (else `cancelling` arms it)."""
    guard = _Guard(what, armed=armed or stopped_by is not None, stop=stopped_by)
    _guards.append(guard)
    try:
        yield guard
    finally:
        _guards.remove(guard)


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
    if _guards:
        _guards[-1].armed = True
    _active.append(run)
    try:
        yield run
    finally:
        _active.remove(run)


async def measured(coro: Coroutine[Any, Any, T]) -> tuple[T, int | None]:
    """Await a measurement that a signal cancels (`cancelling`) instead of stopping advisor: its result (what it
    keeps when cancelled) and the signal that stopped it (None: it ran to the end)."""
    task = asyncio.create_task(coro)
    with cancelling(task, asyncio.get_running_loop()) as run:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:  # cancelled from outside (asyncio.run's own Ctrl-C handling)
            task.cancel()
            result = await task
            run.signum = run.signum or signal.SIGINT
        return result, run.signum


def interrupted_reason(signum: int, n_done: int, n_planned: int) -> str:
    """The reason a partial run gives: 'interrupted by SIGINT after 152 of 215 measured requests'."""
    return f"interrupted by {signal.Signals(signum).name} after {n_done} of {n_planned} measured requests"


def exit_code(e: KeyboardInterrupt) -> int:
    """128 + the signal that stopped advisor: from `e` itself, or the last one handled when a library
    re-raised a plain KeyboardInterrupt (Ray turns one raised inside `ray.wait` into a new one); else 130."""
    if isinstance(e, Interrupted):
        return e.exit_code
    return 128 + _last[0] if _last else 130
