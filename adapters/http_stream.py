"""A small HTTP/1.1 client for streamed POSTs on asyncio protocols: the openai adapter's hot path.

A load generator must send thousands of streamed requests a second from one
core; aiohttp spends ~0.3 ms of CPU per request in its Python layers
(session, request and response objects, stream reader, timers), most of the
budget. This client does what a streamed POST to an inference server needs
and nothing more: keep-alive connections pooled per server (LIFO, so a few
warm connections serve a light load), Content-Length, chunked and
close-delimited bodies, gzip/deflate, TLS through the event loop. It parses
nothing of the body: every read is kept as (arrival perf_counter_ns, bytes)
and handed over when the response has ended, or early when a read holds the
caller's `wake_on` marker (an error event inside a stream that stays open).
With `kernel_stamps` (plain HTTP on Linux), a read's arrival is the kernel's
receive stamp (`adapters.kernel_stamps`), else the time its callback ran.
Written by hand because no maintained client exposes its reads that cheaply.
Not handled, never needed against an inference server: redirects, proxies,
HTTP/2, `Expect: 100-continue` (a stray 1xx head is skipped).
"""

from __future__ import annotations

import asyncio
import resource
import socket
import ssl
import time
import urllib.parse
import zlib
from collections import deque

from adapters.deadlines import EXPIRED, Deadlines
from adapters.http_response import HTTPError, HTTPTimeout, Response, parse_head_cached, wake
from adapters.kernel_stamps import ArrivalClock, kernel_stamps_work, open_stamped

__all__ = ["HTTPError", "HTTPTimeout", "Pool", "Response"]


class _Conn(asyncio.Protocol):
    """One keep-alive connection; serves one exchange at a time."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.used = 0  # exchanges started on this connection
        self.resp: Response | None = None
        self.wake_on: bytes | None = None
        self.got_bytes = False
        self._buf = b""
        self._mode = 0  # 0 head, 1 length, 2 chunked, 3 until close, 4 trailers
        self._left = 0  # length mode: body bytes left; chunked: bytes left in this chunk (-2: CRLF after it)
        self._keep = True
        self._unzip: zlib._Decompress | None = None

    # ---- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  (uvloop's is no asyncio.Transport subclass)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool._lost(self)
        resp = self.resp
        if resp is None:
            return
        if self._mode == 3 and exc is None:  # a close-delimited body ends here
            self._finish()
            return
        why = (f"{type(exc).__name__}: {exc}" if exc else
               "server closed the connection before the response ended" if self.got_bytes else
               "server closed the connection without answering")
        self._fail(HTTPError(why))

    def data_received(self, data: bytes) -> None:
        self.received(data, time.perf_counter_ns())

    def received(self, data: bytes, t_ns: int) -> None:
        """One read that arrived at t_ns (perf_counter_ns)."""
        resp = self.resp
        if resp is None:
            self.transport.abort()  # bytes nobody asked for: the connection is unusable
            return
        self.got_bytes = True
        try:
            if self._mode == 0:
                data = self._head(data)
                if self._mode == 0 or resp.complete:
                    return
            body = self._body(data)
        except HTTPError as e:
            self._fail(e)
            self.transport.abort()
            return
        if body:
            if self._unzip is not None:
                body = self._unzip.decompress(body)
            resp.reads.append((t_ns, body))
            if self.wake_on is not None and self.wake_on in body:
                wake(resp)
        if self._mode == -1:
            self._finish()

    # ---- framing ---------------------------------------------------------------------------
    def _head(self, data: bytes) -> bytes:
        buf = self._buf + data if self._buf else data
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > 65536:
                raise HTTPError("response head over 64 KiB")
            self._buf = buf
            return b""
        self._buf = b""
        rest = buf[end + 4:]
        status, reason, headers, keep, encoding, mode, left = parse_head_cached(buf[:end])
        if 100 <= status < 200:  # an interim head (100 Continue): the real one follows
            return self._head(rest) if rest else b""
        resp = self.resp
        assert resp is not None
        resp.status, resp.reason, resp.headers = status, reason, dict(headers)
        self._keep, self._mode, self._left = keep, mode, left
        if encoding is not None:
            self._unzip = zlib.decompressobj(wbits=47 if encoding == "gzip" else 15)
        if mode == -1:
            self._finish()
        return rest

    def _body(self, data: bytes) -> bytes:
        """Body bytes of this read with transfer framing removed; sets _mode -1 at the body's end."""
        mode = self._mode
        if mode == 1:
            if len(data) >= self._left:
                data, self._mode = data[: self._left], -1  # bytes past the body: none expected, ignored
            self._left -= len(data)
            return data
        if mode == 3:
            return data
        return self._chunked(data)

    def _chunked(self, data: bytes) -> bytes:
        buf = self._buf + data if self._buf else data
        self._buf = b""
        out: list[bytes] = []
        pos, n = 0, len(buf)
        while pos < n:
            if self._mode == 4:  # trailers after the last chunk: up to an empty line
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    self._buf = buf[pos:]
                    break
                if end == pos:
                    self._mode = -1
                    break
                pos = end + 2
                continue
            left = self._left
            if left > 0:
                take = min(left, n - pos)
                out.append(buf[pos:pos + take])
                pos += take
                self._left = left - take
                if self._left == 0:
                    self._left = -2
                continue
            if left == -2:  # the CRLF ending a chunk's data
                if n - pos < 2:
                    self._buf = buf[pos:]
                    break
                if buf[pos:pos + 2] != b"\r\n":
                    raise HTTPError("malformed chunked body (no CRLF after a chunk)")
                pos += 2
                self._left = 0
                continue
            end = buf.find(b"\r\n", pos)
            if end < 0:
                if n - pos > 1024:
                    raise HTTPError("malformed chunked body (chunk size line too long)")
                self._buf = buf[pos:]
                break
            try:
                size = int(buf[pos:end].split(b";", 1)[0], 16)
            except ValueError:
                raise HTTPError(f"malformed chunk size {buf[pos:end][:40]!r}") from None
            pos = end + 2
            if size == 0:
                self._mode = 4
            else:
                self._left = size
        return out[0] if len(out) == 1 else b"".join(out)

    # ---- one exchange ----------------------------------------------------------------------
    def start(self, resp: Response, request: bytes, wake_on: bytes | None) -> None:
        self.resp, self.wake_on, self.got_bytes = resp, wake_on, False
        self._mode, self._left, self._buf, self._unzip = 0, 0, b"", None
        self.used += 1
        assert self.transport is not None
        self.transport.write(request)

    def _finish(self) -> None:
        resp = self.resp
        assert resp is not None
        resp.complete = True
        self.resp = None
        wake(resp)
        if resp._deadline is not None:
            Deadlines.done(resp._deadline)
        if self._keep and not self.closed:
            self.pool._release(self)
        else:
            self.close()

    def _fail(self, error: HTTPError) -> None:
        resp = self.resp
        if resp is None:
            return
        self.resp = None
        resp.error = error
        wake(resp)
        if resp._deadline is not None:
            Deadlines.done(resp._deadline)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.abort()
        resp = self.resp
        if resp is not None and resp._deadline is not None:  # abandoned: its deadline no longer matters
            Deadlines.done(resp._deadline)


def _expire(item: tuple[_Conn, Response] | None) -> None:
    """An exchange's deadline passed: fail its response and drop its connection."""
    if item is None:
        return  # still acquiring a connection: _acquire's own timeout covers that
    conn, resp = item
    if conn.resp is resp:
        conn._fail(HTTPTimeout(f"no complete response within {conn.pool.timeout_s:g} s"))
        conn.close()


class Pool:
    """Keep-alive connections to one server, bound to the event loop that made it."""

    def __init__(self, url: str, limit: int = 0, timeout_s: float = 0, kernel_stamps: bool = False) -> None:
        p = urllib.parse.urlsplit(url)
        self.url = url
        self.host = p.hostname or "127.0.0.1"
        self.tls = p.scheme == "https"
        self.port = p.port or (443 if self.tls else 80)
        self.host_header = p.netloc.rpartition("@")[2]
        self.limit = limit  # most open connections (0: none)
        self.timeout_s = timeout_s  # an exchange not ended this long after send() began fails with HTTPTimeout (0: none)
        # where reads' arrival times come from: the kernel's receive stamp, or the loop's callback (TLS, elsewhere)
        self.arrival_clock: ArrivalClock = "kernel" if kernel_stamps and not self.tls and kernel_stamps_work() \
            else "loop"
        self.loop = asyncio.get_running_loop()
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # a socket per stream, thousands of them: lift
        if hard == resource.RLIM_INFINITY or soft < hard:  # the soft limit on open files to the hard one
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        self._deadlines = Deadlines(timeout_s, _expire) if timeout_s > 0 else None
        self._idle: list[_Conn] = []
        self._open: set[_Conn] = set()
        self._connecting = 0  # connections being opened (they count against the limit already)
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._ssl = ssl.create_default_context() if self.tls else None
        self._heads: dict[tuple[str, ...], bytes] = {}  # request heads without their Content-Length value
        self.prefixes: dict[str, bytes] = {}  # the caller's own cache of head_prefix() results (by path)

    def head(self, method: str, path: str, headers: dict[str, str], n_body: int) -> bytes:
        """The request head for `path` with these extra headers and a body of n_body bytes."""
        return self.head_prefix(method, path, headers) + b"%d\r\n\r\n" % n_body

    def head_prefix(self, method: str, path: str, headers: dict[str, str]) -> bytes:
        """The request head up to the Content-Length value: add `b"%d\\r\\n\\r\\n" % len(body)` and the body."""
        key = (method, path, *headers.items())
        prefix = self._heads.get(key)
        if prefix is None:
            lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host_header}", "User-Agent: advisor", "Accept: */*"]
            lines += [f"{k}: {v}" for k, v in headers.items()]
            prefix = self._heads[key] = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")
        return prefix

    async def send(self, request: bytes, wake_on: bytes | None = None) -> tuple[Response, _Conn]:
        """Send one request; returns its Response once it has ended (or a read held `wake_on`) and its connection.

        A reused connection that the server closed before answering is retried once on a new one (the server
        dropped an idle keep-alive connection just as it was used). Raises HTTPError (HTTPTimeout when the
        pool's timeout passed before the response ended, also while waiting in `Response.more()`).
        """
        deadline = self._deadlines.add(None) if self._deadlines is not None else None
        try:
            for attempt in range(2):
                conn = self._idle_conn() or await self._acquire(deadline)
                resp = Response()
                fut = resp._wake_future()
                if deadline is not None:
                    if deadline[2] == EXPIRED:  # passed while the connection was being made
                        self._release(conn)
                        raise HTTPTimeout(f"no connection within {self.timeout_s:g} s")
                    deadline[1] = (conn, resp)
                    resp._deadline = deadline
                conn.start(resp, request, wake_on)
                try:
                    await fut
                except BaseException:  # timeout or cancel: the exchange is abandoned mid-way
                    conn.close()
                    raise
                if resp.error is not None:
                    if attempt == 0 and conn.used > 1 and not conn.got_bytes and type(resp.error) is HTTPError:
                        continue
                    raise resp.error
                return resp, conn
        except BaseException:
            if deadline is not None:
                Deadlines.done(deadline)  # nothing waits on it any more
            raise
        raise AssertionError("unreachable")

    def _idle_conn(self) -> _Conn | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        return None

    async def _acquire(self, deadline: list | None) -> _Conn:
        if deadline is None:
            return await self._new_conn()
        try:  # rare (a new connection, or a wait under the limit): asyncio's own timeout is cheap enough here
            async with asyncio.timeout_at(deadline[0]):
                return await self._new_conn()
        except TimeoutError:
            raise HTTPTimeout(f"no connection within {self.timeout_s:g} s") from None

    async def _new_conn(self) -> _Conn:
        while self.limit and len(self._open) + self._connecting >= self.limit:
            waiter = self.loop.create_future()
            self._waiters.append(waiter)
            await waiter
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
        self._connecting += 1
        try:
            if self.arrival_clock == "kernel":
                conn = _Conn(self)
                await open_stamped(self.loop, self.host, self.port, conn)
            else:
                _, conn = await self.loop.create_connection(lambda: _Conn(self), self.host, self.port, ssl=self._ssl,
                                                            server_hostname=self.host if self.tls else None)
        except OSError as e:
            raise HTTPError(f"cannot connect to {self.host}:{self.port}: {type(e).__name__}: {e}") from e
        finally:
            self._connecting -= 1
            self._wake_waiter()  # a failed connect frees its place under the limit
        self._open.add(conn)
        return conn

    def _release(self, conn: _Conn) -> None:
        self._idle.append(conn)
        self._wake_waiter()

    def _lost(self, conn: _Conn) -> None:
        self._open.discard(conn)
        self._wake_waiter()

    def _wake_waiter(self) -> None:
        while self._waiters:
            w = self._waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    def close(self) -> None:
        """Close every connection (call on the pool's own loop)."""
        if self._deadlines is not None:
            self._deadlines.close()
        for conn in list(self._open):
            conn.close()
        self._open.clear()
        self._idle.clear()

    def detach(self) -> None:
        """Forget every connection without touching its loop (that loop is gone)."""
        for conn in self._open:
            conn.closed = True
            sock = conn.transport.get_extra_info("socket") if conn.transport is not None else None
            if sock is not None:  # asyncio's TransportSocket: no close(); shutdown ends the connection now,
                try:              # the descriptor goes with the transport
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                if isinstance(sock, socket.socket):  # a stamped transport's own socket: nothing else closes it
                    sock.close()
        self._open.clear()
        self._idle.clear()
