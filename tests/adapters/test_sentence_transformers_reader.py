"""The sentence-transformers engine's reader thread hands each answer to its request's loop; an answer that
arrives after that loop closed (a run stopped by Ctrl-C) is dropped, never a traceback on the user's screen."""

from __future__ import annotations

import asyncio
import threading

from adapters.sentence_transformers_embed import _hand


def test_an_answer_reaches_its_waiting_request_from_another_thread():
    async def wait() -> tuple:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        threading.Thread(target=_hand, args=(loop, fut, ("ok", 1, 4, 8, None, 6), 123)).start()
        return await asyncio.wait_for(fut, 5)

    assert asyncio.run(wait()) == (123, 4, 8, None, 6)


def test_an_answer_after_its_loop_closed_is_dropped():
    loop = asyncio.new_event_loop()
    fut = loop.create_future()
    loop.close()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            _hand(loop, fut, ("ok", 1, 4, 8, None, 6), 123)
        except BaseException as e:  # noqa: BLE001 (what the reader thread would have died of)
            errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    t.join()
    assert errors == [] and not fut.done()
