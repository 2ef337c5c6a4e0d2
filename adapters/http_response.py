"""One HTTP/1.1 response as it arrives (adapters.http_stream), and the parsing of its head.

The head of every response is parsed once per distinct head: a server's heads
repeat, at most their Date changes (once a second), so a small cache keyed by
the head's bytes skips the parse for nearly every response of a run.
"""

from __future__ import annotations

import asyncio


class HTTPError(Exception):
    """The connection failed or the server broke HTTP framing (the adapter's `connection` kind)."""


class HTTPTimeout(HTTPError, TimeoutError):
    """The exchange did not end within the pool's timeout (the connection is closed)."""


class Response:
    """One response as it arrives: head, then body reads with their arrival times."""

    __slots__ = ("status", "reason", "headers", "reads", "complete", "error", "_wake", "_deadline")

    def __init__(self) -> None:
        self.status = 0
        self.reason = ""
        self.headers: dict[str, str] = {}  # lower-case names; a repeated header keeps the last value
        self.reads: list[tuple[int, bytes]] = []  # decoded body bytes per socket read, with arrival time
        self.complete = False
        self.error: HTTPError | None = None  # the exchange failed (set instead of `complete`)
        self._wake: asyncio.Future[None] | None = None
        self._deadline: list | None = None  # its entry in the pool's Deadlines

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    def text(self, limit: int) -> str:
        return b"".join(r[1] for r in self.reads)[:limit * 4].decode("utf-8", errors="replace")[:limit]

    async def more(self) -> None:
        """Wait for the next wake-up: more reads holding the marker, or the end. Raises HTTPError on failure."""
        if not self.complete and self.error is None:
            await self._wake_future()
        if self.error is not None:
            raise self.error

    def _wake_future(self) -> asyncio.Future[None]:
        if self._wake is None or self._wake.done():
            self._wake = asyncio.get_running_loop().create_future()
        return self._wake


def wake(resp: Response) -> None:
    """Wake whoever waits on the response (send() or more())."""
    fut = resp._wake
    if fut is not None and not fut.done():
        fut.set_result(None)


# parsed response heads by their bytes
HEADS_CACHE: dict[bytes, tuple[int, str, dict[str, str], bool, str | None, int, int]] = {}
_HEADS_MAX = 256


def parse_head(head: bytes) -> tuple[int, str, dict[str, str], bool, str | None, int, int]:
    """A response head (without its blank line) -> status, reason, headers (lower-case names), keep-alive,
    Content-Encoding to undo (None: identity), body framing mode (-1 none, 1 length, 2 chunked, 3 until close)
    and, in length mode, the body's length. Raises HTTPError."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HTTPError(f"not an HTTP/1.x response: {lines[0][:80]!r}")
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else ""
    headers: dict[str, str] = {}
    if 100 <= status < 200:
        return status, reason, headers, True, None, 0, 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    keep = parts[0] != "HTTP/1.0" and headers.get("connection", "").lower() != "close"
    encoding = headers.get("content-encoding", "identity").lower()
    if encoding not in ("gzip", "deflate", "identity"):
        raise HTTPError(f"unsupported Content-Encoding {encoding!r}")
    left = 0
    if status in (204, 304):
        mode = -1
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        mode = 2
    elif "content-length" in headers:
        try:
            left = int(headers["content-length"])
        except ValueError:
            raise HTTPError(f"bad Content-Length {headers['content-length']!r}") from None
        mode = 1 if left > 0 else -1
    else:
        mode, keep = 3, False
    return status, reason, headers, keep, None if encoding == "identity" else encoding, mode, left


def parse_head_cached(head: bytes) -> tuple[int, str, dict[str, str], bool, str | None, int, int]:
    """parse_head(), once per distinct head (the result's headers dict is shared: copy it before changing it)."""
    parsed = HEADS_CACHE.get(head)
    if parsed is None:
        parsed = parse_head(head)
        if len(HEADS_CACHE) >= _HEADS_MAX:
            HEADS_CACHE.clear()
        HEADS_CACHE[head] = parsed
    return parsed
