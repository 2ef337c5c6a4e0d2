"""The one thread-to-asyncio bridge: an engine's own thread hands items to the coroutine waiting for them.

A `LoopQueue` is made inside the requesting coroutine, so its loop and queue are that coroutine's own.
The engine thread calls `put` (one item) or `deliver_all` (one step's items for one loop, with a single
wake-up of that loop). Both return False when the loop has closed (nobody is listening any more), so the
engine can drop the request instead of failing its thread. Used by own_engine's `AsyncLLMEngine` and by
the adapters whose engine runs in a thread of their own (`adapters/engine_thread.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LoopQueue:
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.get_running_loop, kw_only=True)
    queue: asyncio.Queue = field(default_factory=asyncio.Queue, kw_only=True)

    def put(self, item: Any) -> bool:
        """Deliver `item` to the coroutine's loop (from any thread); False when that loop is gone."""
        return deliver_all(self.loop, [(self, item)])


def deliver_all(loop: asyncio.AbstractEventLoop, items: Sequence[tuple[LoopQueue, Any]]) -> bool:
    """Hand `items` to their queues on `loop` with one wake-up; False when that loop is gone."""
    try:
        loop.call_soon_threadsafe(_put_items, items)
        return True
    except RuntimeError:  # the event loop was closed
        return False


def _put_items(items: Sequence[tuple[LoopQueue, Any]]) -> None:
    for target, item in items:
        target.queue.put_nowait(item)
