"""One timer for many per-request deadlines: each fires on time, finished ones never fire, nothing leaks."""

from __future__ import annotations

import asyncio

import pytest

from adapters.deadlines import DONE, EXPIRED, PENDING, Deadlines


def test_each_pending_deadline_fires_once_on_time_and_finished_ones_never():
    async def go():
        loop = asyncio.get_running_loop()
        fired: list[tuple[str, float]] = []
        d = Deadlines(0.05, lambda item: fired.append((item, loop.time())))
        t0 = loop.time()
        a = d.add("a")
        await asyncio.sleep(0.02)
        b = d.add("b")
        c = d.add("c")
        Deadlines.done(a)  # finished before its deadline: never fires
        assert d.pending() == 2
        await asyncio.sleep(0.1)
        assert [f[0] for f in fired] == ["b", "c"]
        assert b[2] == EXPIRED and c[2] == EXPIRED and a[2] == DONE
        # on time: not before the deadline (less the loop clock's millisecond), and not long after
        for _, t in fired:
            assert 0.07 - 0.0011 <= t - t0 <= 0.07 + 0.03
        Deadlines.done(b)  # marking an expired entry done changes nothing
        assert b[2] == EXPIRED
        e = d.add("e")
        assert e[2] == PENDING and d.pending() == 1
        d.close()
        await asyncio.sleep(0.08)
        assert [f[0] for f in fired] == ["b", "c"]  # closed: "e" never fires

    asyncio.run(go())


def test_finished_entries_leave_the_queue_as_new_ones_come():
    async def go():
        d = Deadlines(60, lambda item: None)
        for _ in range(1000):
            Deadlines.done(d.add(None))
        assert len(d._fifo) <= 1  # only what is in flight is held
        d.close()

    asyncio.run(go())


def test_a_timeout_must_be_positive():
    async def go():
        with pytest.raises(ValueError, match="> 0"):
            Deadlines(0, lambda item: None)

    asyncio.run(go())
