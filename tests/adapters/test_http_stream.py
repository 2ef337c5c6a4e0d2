"""The hand-written HTTP/1.1 client under byte-exact servers: framing, keep-alive, failures."""

from __future__ import annotations

import asyncio
import functools
import gzip
import socket
import threading
import time

import pytest

from adapters import http_stream
from adapters.http_stream import HTTPError, Pool
from adapters.kernel_stamps import RealtimeOffset, kernel_stamps_work

STAMPS = [False, pytest.param(True, marks=pytest.mark.skipif(not kernel_stamps_work(),
                                                             reason="no kernel receive stamps here"))]


@pytest.fixture(autouse=True, params=STAMPS, ids=["loop-stamps", "kernel-stamps"])
def stamps(request, monkeypatch) -> bool:
    """Every test here runs on both transports: the loop's, and the kernel-stamped socket."""
    monkeypatch.setitem(globals(), "Pool", functools.partial(http_stream.Pool, kernel_stamps=request.param))
    return request.param

SSE = b"data: a\n\ndata: b\n\n"


async def _serve(replies: list[list[bytes]], seen: list[bytes], close_after: bool = False):
    """A loopback server: for each request (one per reply, on any connection) it writes the reply's pieces."""
    queue = list(replies)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while queue:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            seen.append(head + await reader.readexactly(length))
            for piece in queue.pop(0):
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0.01)  # separate TCP reads
            if close_after:
                break
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def _post(pool: Pool, body: bytes = b"{}"):
    request = pool.head("POST", "/v1/completions", {"Content-Type": "application/json"}, len(body)) + body
    resp, _ = await pool.send(request)
    return resp


def _body(resp) -> bytes:
    return b"".join(r[1] for r in resp.reads)


def test_chunked_body_split_anywhere_and_reused_connection():
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked = b"9\r\ndata: a\n\n\r\n9;ext=1\r\ndata: b\n\n\r\n0\r\nX-Trailer: 1\r\n\r\n"

    async def go():
        seen: list[bytes] = []
        cuts = [[head + chunked], [head, chunked[:3], chunked[3:14], chunked[14:]],
                [head[:10], head[10:] + chunked[:1], chunked[1:]]]
        server, url = await _serve(cuts, seen)
        async with server:
            pool = Pool(url)
            for _ in cuts:
                resp = await _post(pool)
                assert resp.status == 200 and resp.complete and _body(resp) == SSE
                assert resp.content_type == "text/event-stream"
            assert len(pool._open) == 1  # one keep-alive connection served all three
            pool.close()
        assert seen[0].startswith(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:") and seen[0].endswith(b"{}")

    asyncio.run(go())


def test_content_length_close_delimited_gzip_and_interim_head():
    zipped = gzip.compress(SSE)
    replies = [
        [b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(SSE), SSE],
        [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(zipped), zipped],
        [b"HTTP/1.0 200 OK\r\n\r\n", SSE],  # no length: the body ends when the server closes
    ]

    async def go():
        server, url = await _serve(replies, [])
        async with server:
            pool = Pool(url)
            for _ in replies:
                resp = await _post(pool)
                assert resp.status == 200 and _body(resp) == SSE
            pool.close()

    asyncio.run(go())


def test_a_body_cut_short_is_a_connection_error_and_a_refused_port_too():
    replies = [[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b"data: a\n\n"]]

    async def go():
        server, url = await _serve(replies, [], close_after=True)
        async with server:
            with pytest.raises(HTTPError, match="closed the connection before the response ended"):
                await _post(Pool(url))
        with pytest.raises(HTTPError, match="cannot connect"):
            await _post(Pool(url))  # the server is gone

    asyncio.run(go())


def test_an_idle_connection_the_server_dropped_is_retried_once_on_a_new_one():
    ok = [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]

    async def go():
        server, url = await _serve([ok, ok], [], close_after=True)  # closes each connection after one answer
        async with server:
            pool = Pool(url)
            assert _body(await _post(pool)) == b"ok"
            await asyncio.sleep(0.05)  # the close has not been seen by the pool's idle list yet, or has
            assert _body(await _post(pool)) == b"ok"
            pool.close()

    asyncio.run(go())


def test_connection_cap_queues_requests_instead_of_opening_more():
    reply = [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", b"ok"]

    async def go():
        server, url = await _serve([reply] * 4, [])
        async with server:
            pool = Pool(url, limit=1)
            resps = await asyncio.gather(*(_post(pool) for _ in range(4)))
            assert all(_body(r) == b"ok" for r in resps) and len(pool._open) == 1
            pool.close()

    asyncio.run(go())


def test_detach_after_the_loop_ended_closes_the_connection_without_raising():
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    eof = threading.Event()

    def serve() -> None:  # one keep-alive reply, then wait for the client to end the connection
        conn, _ = listener.accept()
        with conn:
            data = b""
            while not data.endswith(b"{}"):
                data += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            conn.settimeout(5)
            try:
                if conn.recv(1) == b"":
                    eof.set()
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()

    async def go() -> Pool:
        pool = Pool(url)  # made on (and bound to) this loop, as the adapter makes it
        resp = await _post(pool)
        assert resp.status == 200
        return pool

    pool = asyncio.run(go())  # the loop ends with the connection still open (no pool.close())
    pool.detach()  # what the adapter does when its loop is gone: must not raise
    t.join(6)
    listener.close()
    assert eof.is_set(), "the server never saw the connection end"


def test_the_pool_times_out_an_exchange_that_does_not_end_and_drops_its_connection():
    from adapters.http_stream import HTTPTimeout

    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 100\r\n\r\n"

    async def go():
        seen: list[bytes] = []
        # the answer stops half-way, then the server waits (30 empty writes, 10 ms apart): the pool's deadline ends it
        server, url = await _serve([[head + b"data: a\n\n"] + [b""] * 30], seen)
        async with server:
            pool = Pool(url, timeout_s=0.1)
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            with pytest.raises(HTTPTimeout, match="within 0.1 s"):
                resp, _ = await pool.send(pool.head("POST", "/", {}, 2) + b"{}", wake_on=b"never")
            assert 0.09 <= loop.time() - t0 < 0.3
            assert not pool._idle or all(c.closed for c in pool._idle)  # never reused
            assert pool._deadlines.pending() == 0
            pool.close()

    asyncio.run(go())


def test_response_heads_are_parsed_once_per_distinct_head():
    from adapters.http_response import HEADS_CACHE, parse_head_cached

    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 5\r\nX-Test-Cache: 1"
    first = parse_head_cached(head)
    assert first[:2] == (200, "OK") and first[2]["x-test-cache"] == "1" and first[5:] == (1, 5)
    assert parse_head_cached(bytes(head)) is first and head in HEADS_CACHE
    with pytest.raises(HTTPError, match="not an HTTP/1.x response"):
        parse_head_cached(b"SPDY/3 200 OK")


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_read_is_stamped_when_it_arrived_not_when_a_busy_loop_got_to_it(stamps, loop):
    """The server writes while the client's loop is blocked for 80 ms: the kernel's stamp falls inside the
    server's write, the loop's stamp after the block."""
    factory = pytest.importorskip("uvloop").new_event_loop if loop == "uvloop" else None
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    written: list[tuple[int, int]] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while not data.endswith(b"{}"):
                data += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(SSE))
            time.sleep(0.02)  # the client is blocked by now
            before = time.perf_counter_ns()
            conn.sendall(SSE)
            written.append((before, time.perf_counter_ns()))
            time.sleep(0.2)

    t = threading.Thread(target=serve, daemon=True)
    t.start()

    async def go():
        pool = Pool(url)
        assert pool.arrival_clock == ("kernel" if stamps else "loop")
        sending = asyncio.ensure_future(_post(pool))
        while not pool._open or not any(c.got_bytes for c in pool._open):
            await asyncio.sleep(0.001)
        time.sleep(0.08)  # a busy client: the loop runs nothing meanwhile
        resp = await sending
        pool.close()
        return resp

    with asyncio.Runner(loop_factory=factory) as runner:
        resp = runner.run(go())
    t.join(5)
    listener.close()
    (before, after), = written
    t_read = resp.reads[-1][0]
    if stamps:
        assert before - 1_000_000 <= t_read <= after + 1_000_000, (t_read - before) / 1e6
    else:
        assert t_read - after > 40_000_000  # the loop's stamp carries the block


def test_the_realtime_offset_is_read_again_when_a_stamp_cannot_be_right(monkeypatch):
    clock = RealtimeOffset()
    now = time.perf_counter_ns()
    real = now + clock.offset_ns
    assert abs(clock.to_perf(real - 5_000, now) - (now - 5_000)) <= 2 * clock.error_ns + 1_000
    clock.offset_ns -= 3_000_000  # the wall clock stepped back 3 ms: stamps look 3 ms in the future
    n = clock.n_measured
    assert clock.to_perf(real - 10_000, now) <= now and clock.n_measured == n + 1  # measured again
    assert abs(clock.offset_ns - (real - now)) < 1_000_000
    assert clock.to_perf(real + 10**9, now) == now and clock.n_clamped == 1  # never later than its read
