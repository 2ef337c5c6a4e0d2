"""The event loop a run is driven on: uvloop where it is installed (the `[fast]` extra), else asyncio's own.

uvloop cuts the load generator's CPU per request (its transports and timers are
in C). `ADVISOR_EVENT_LOOP=asyncio` forces the stock loop (to compare, or to
rule uvloop out); the loop used is recorded in every result (`loadgen.event_loop`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

ENV = "ADVISOR_EVENT_LOOP"  # auto (default), uvloop or asyncio


def _uvloop() -> Any:
    choice = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", "uvloop", "asyncio"):
        raise ValueError(f"{ENV} must be auto, uvloop or asyncio, got {choice!r}")
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ValueError(f"{ENV}=uvloop but uvloop is not installed: pip install -e '.[fast]'") from None
        return None
    return uvloop


def name() -> str:
    """The loop `run` uses here, with its version: "uvloop 0.23.0" or "asyncio"."""
    uv = _uvloop()
    return f"uvloop {uv.__version__}" if uv is not None else "asyncio"


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)` on the chosen loop."""
    uv = _uvloop()
    if uv is None:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uv.new_event_loop) as runner:
        return runner.run(coro)
