"""Arrival times from the kernel: each socket read stamped when its bytes reached the machine, not when the
event loop got to them.

A busy client wakes late: a read stamped with `perf_counter_ns()` when its callback runs carries that
wake-up delay, and it lands in the ITL tail (+13% at p99 at 40-100 req/s on a 2-core machine;
benchmarks/history/arrival_stamps.md).
Linux stamps every received packet when `SO_TIMESTAMPNS` is on for its socket; `recvmsg` returns the stamp
of the last packet a read consumed. `StampedTransport` reads a plain TCP socket that way from the loop's
reader callback (`loop.add_reader`: asyncio's and uvloop's transports give no ancillary data) and hands
each read to its protocol as `received(data, t_ns)`.

The kernel's stamp is CLOCK_REALTIME; every record time is `time.perf_counter_ns()` (CLOCK_MONOTONIC).
`RealtimeOffset` converts: the offset between the two clocks is read by bracketing one `time.time_ns()`
between two `perf_counter_ns()` calls, the narrowest bracket of 16 kept (its half-width, ~50 ns, is the
error), and read again every second and whenever a converted stamp is later than now or over 100 ms old
(a step of the wall clock). NTP's rate corrections apply to both clocks alike, so between steps the offset
is constant. A stamp is never later than the moment its read ran, nor earlier than the previous read's on
that connection. Not used for TLS (the TLS layer owns the socket) nor where `kernel_stamps_work()` is False:
there each read is stamped when its callback runs, as before.
"""

from __future__ import annotations

import asyncio
import platform
import socket
import struct
import sys
import threading
import time
from typing import Any, Literal

ArrivalClock = Literal["kernel", "loop"]
# SOL_SOCKET option numbers (asm-generic, the layout of these machines); other layouts use the loop's stamps
_SO_TIMESTAMPNS_NEW, _SO_TIMESTAMPNS_OLD = 64, 35
_GENERIC_MACHINES = ("x86_64", "amd64", "aarch64", "arm64", "i386", "i686", "riscv64", "armv7l")
_TS_NEW, _TS_OLD = struct.Struct("qq"), struct.Struct("@ll")  # __kernel_timespec; the old struct timespec
_CMSG_SPACE = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 0
_READ_SIZE = 262144
# Reads go into one buffer per thread and are copied out at once (a fresh 256 KiB bytes per read, as `recvmsg`
# makes, cost an mmap and a munmap every read: +30% CPU per event in benchmarks/arrival_stamps.py).
_BUFFERS = threading.local()


def _buffer() -> tuple[bytearray, memoryview]:
    pair = getattr(_BUFFERS, "pair", None)
    if pair is None:
        buf = bytearray(_READ_SIZE)
        pair = _BUFFERS.pair = (buf, memoryview(buf))
    return pair


_RECHECK_NS = 1_000_000_000  # read the offset again every second
_STALE_NS = 100_000_000  # a stamp this much older than its read: check the offset before trusting it


class RealtimeOffset:
    """CLOCK_REALTIME ns -> `time.perf_counter_ns()` ns, by an offset measured by bracketing."""

    def __init__(self) -> None:
        self.offset_ns = 0  # realtime - perf_counter
        self.error_ns = 0  # half the narrowest bracket
        self.n_measured = 0
        self.min_offset_ns: int | None = None  # the offsets read over the process's life: a wall-clock step
        self.max_offset_ns: int | None = None  # shows as their spread
        self.n_clamped = 0  # stamps later than their read even after a fresh offset: the read's own time used
        self.n_unstamped = 0  # reads that came without a kernel stamp: the read's own time used
        self._at_ns = 0
        self.measure()

    def measure(self) -> None:
        best_w, best_off = None, 0
        perf, real = time.perf_counter_ns, time.time_ns
        for _ in range(16):
            a = perf()
            r = real()
            b = perf()
            if best_w is None or b - a < best_w:
                best_w, best_off = b - a, r - (a + b) // 2
        assert best_w is not None
        self.offset_ns, self.error_ns, self._at_ns = best_off, (best_w + 1) // 2, time.perf_counter_ns()
        self.n_measured += 1
        self.min_offset_ns = best_off if self.min_offset_ns is None else min(self.min_offset_ns, best_off)
        self.max_offset_ns = best_off if self.max_offset_ns is None else max(self.max_offset_ns, best_off)

    def to_perf(self, realtime_ns: int, now_ns: int) -> int:
        """A kernel stamp on the perf_counter clock; `now_ns` is perf_counter_ns() when its read ran."""
        t = realtime_ns - self.offset_ns
        if t > now_ns or t < now_ns - _STALE_NS or now_ns - self._at_ns > _RECHECK_NS:
            self.measure()
            t = realtime_ns - self.offset_ns
            if t > now_ns:
                self.n_clamped += 1
                t = now_ns
        return t


_OFFSET: RealtimeOffset | None = None
_WORKS: tuple[int, struct.Struct] | None | bool = False  # False: not tested yet; None: unavailable


def offset() -> RealtimeOffset:
    """This process's converter (one for every connection)."""
    global _OFFSET
    if _OFFSET is None:
        _OFFSET = RealtimeOffset()
    return _OFFSET


def _option() -> tuple[int, struct.Struct] | None:
    """The socket option and stamp layout that work here, found once on a loopback connection; None: none."""
    global _WORKS
    if _WORKS is not False:
        return _WORKS  # type: ignore[return-value]
    _WORKS = None
    if sys.platform != "linux" or platform.machine().lower() not in _GENERIC_MACHINES or not _CMSG_SPACE:
        return None
    for opt, layout in ((_SO_TIMESTAMPNS_NEW, _TS_NEW), (_SO_TIMESTAMPNS_OLD, _TS_OLD)):
        if _self_test(opt, layout):
            _WORKS = (opt, layout)
            break
    return _WORKS


# Linux turns receive stamping on for the whole machine while any socket asks for it, and turns it on later
# (deferred work) when the first one does: until then packets arrive unstamped. One socket of this process
# keeps asking from the self-test on, so a connection opened after the last one closed is stamped from its first
# packet too.
_KEEP: list[socket.socket] = []


def _self_test(opt: int, layout: struct.Struct) -> bool:
    """Does a loopback TCP read with `opt` on come with a stamp within a second of the wall clock? Tried for up
    to half a second: the machine-wide switch may still be on its way."""
    try:
        keep = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        keep.setsockopt(socket.SOL_SOCKET, opt, 1)
    except OSError:
        return False
    try:
        with socket.create_server(("127.0.0.1", 0)) as srv, \
                socket.create_connection(srv.getsockname(), timeout=2) as cli:
            cli.setsockopt(socket.SOL_SOCKET, opt, 1)
            peer, _ = srv.accept()
            with peer:
                deadline = time.monotonic() + 0.5
                while time.monotonic() < deadline:
                    peer.sendall(b"x")
                    _, anc, _, _ = cli.recvmsg(16, _CMSG_SPACE)
                    for level, kind, data in anc:
                        if level == socket.SOL_SOCKET and kind == opt and len(data) >= layout.size:
                            sec, nsec = layout.unpack_from(data)
                            if abs(sec * 1_000_000_000 + nsec - time.time_ns()) < 1_000_000_000:
                                _KEEP.append(keep)
                                return True
                            keep.close()
                            return False
                    time.sleep(0.002)
    except OSError:
        pass
    keep.close()
    return False


def kernel_stamps_work() -> bool:
    """True where reads can be stamped by the kernel (Linux on the common machines, the self-test passed)."""
    return _option() is not None


def arrival_clock_info(want_kernel: bool) -> dict[str, Any]:
    """What a run records about its arrival stamps (result.json `engine.extra`)."""
    if want_kernel and kernel_stamps_work():
        off = offset()
        return {"arrival_clock": "kernel",
                "arrival_clock_detail": "SO_TIMESTAMPNS receive stamp (CLOCK_REALTIME) minus the CLOCK_REALTIME - "
                                        "perf_counter_ns offset, read every second (docs/metrics.md)",
                "arrival_clock_offset_error_ns": off.error_ns}
    why = "asked for" if not want_kernel else "kernel stamps unavailable here (or TLS)"
    return {"arrival_clock": "loop", "arrival_clock_detail": f"perf_counter_ns when the event loop ran the read ({why})"}


class StampedTransport:
    """A connected, non-blocking TCP socket driven by the loop's reader/writer callbacks (just what
    `adapters.http_stream` uses of a transport: write, abort, get_extra_info("socket"))."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol: Any) -> None:
        opt = _option()
        assert opt is not None, "kernel stamps are not available here: use the loop's transport"
        self._opt, self._layout = opt
        sock.setsockopt(socket.SOL_SOCKET, self._opt, 1)
        self._loop, self._sock, self._protocol = loop, sock, protocol
        self._clock = offset()
        self._out = b""  # bytes the socket did not take yet
        self._closed = False
        self._last_ns = 0
        protocol.connection_made(self)
        loop.add_reader(sock.fileno(), self._readable)

    def _readable(self) -> None:
        try:
            buf, view = _buffer()
            n, anc, _, _ = self._sock.recvmsg_into((buf,), _CMSG_SPACE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._lost(e)
            return
        if not n:
            self._lost(None)  # the server closed the connection
            return
        data = bytes(view[:n])
        now = time.perf_counter_ns()
        t = 0
        for level, kind, stamp in anc:
            if kind == self._opt and level == socket.SOL_SOCKET:
                sec, nsec = self._layout.unpack_from(stamp)
                t = self._clock.to_perf(sec * 1_000_000_000 + nsec, now)
        if not t:
            self._clock.n_unstamped += 1
            t = now
        if t < self._last_ns:  # offsets read at different times may differ by their error: keep reads in order
            t = self._last_ns
        self._last_ns = t
        self._protocol.received(data, t)

    def write(self, data: bytes) -> None:
        if self._closed:
            return
        if self._out:
            self._out += data
            return
        try:
            n = self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as e:
            self._lost(e)
            return
        if n < len(data):
            self._out = data[n:]
            self._loop.add_writer(self._sock.fileno(), self._writable)

    def _writable(self) -> None:
        try:
            n = self._sock.send(self._out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._lost(e)
            return
        self._out = self._out[n:]
        if not self._out:
            self._loop.remove_writer(self._sock.fileno())

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._sock if name == "socket" else default

    def abort(self) -> None:
        """Close now; the protocol hears `connection_lost(None)` on the next turn of the loop (as asyncio's)."""
        if self._close():
            self._loop.call_soon(self._protocol.connection_lost, None)

    def _lost(self, exc: Exception | None) -> None:
        if self._close():
            self._protocol.connection_lost(exc)

    def _close(self) -> bool:
        if self._closed:
            return False
        self._closed = True
        fd = self._sock.fileno()
        if fd >= 0:
            self._loop.remove_reader(fd)
            if self._out:
                self._loop.remove_writer(fd)
        self._sock.close()
        return True


async def open_stamped(loop: asyncio.AbstractEventLoop, host: str, port: int, protocol: Any) -> StampedTransport:
    """A TCP connection to host:port whose reads are stamped by the kernel. Raises OSError."""
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    error: OSError | None = None
    for family, kind, proto, _, addr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.sock_connect(sock, addr)
        except OSError as e:
            sock.close()
            error = e
            continue
        except BaseException:
            sock.close()
            raise
        return StampedTransport(loop, sock, protocol)
    raise error or OSError(f"cannot resolve {host}")
