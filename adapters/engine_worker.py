"""The engine side of `EngineProcess`: one child process that owns one in-process adapter.

Started as `python -m adapters.engine_worker FD` with one end of a socket pair.
The parent sends `("start", spec)`; this process pins itself to its CPUs,
builds and starts the adapter (its own warm-up included) and answers
`("info", EngineInfo)` or `("error", ...)`. Then it serves `("req", rid,
RequestSpec)` and `("cancel", rid)` concurrently on its own event loop and
writes back `("chunk", rid, t_engine_ns, n_tokens, text, n_prompt, ids)`,
`("done", rid)`, `("fail", rid, kind, message)`, and the engine's gauges
(`("stats", {...})`) while it is busy. End of file on the socket (the parent
closed it or died, even by SIGKILL) or `("close",)` closes the engine and
ends the process, so an engine never outlives its client.

An adapter that offers a batched channel (`Capabilities.batched_channel`: `open_channel(send)`,
`submit(rid, spec)`, `cancel(rid)`; own and own-static) is served without an event loop instead
(`_serve_batched`): a reader thread takes the parent's messages, and the engine's own thread sends one
`("step", t_engine_ns, [(rid, ids, finished), ...], stats | None)` message per engine step, as vLLM's
EngineCore process sends one batched output per step (no per-token task, pickle or write, nothing else in
this process competing with the step for the GIL). A request's first `step` item carries its first token;
its item with `finished` ends it.

Frames are a 4-byte big-endian length and a pickle: both ends are this
package on one machine (the channel is private to the two processes).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import pickle
import select
import signal
import socket
import struct
import sys
import threading
from typing import Any

_HEADER = struct.Struct(">I")
STATS_INTERVAL_S = 0.5


def frame(msg: Any) -> bytes:
    body = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


class FrameReader:
    """Bytes in, whole messages out (a frame may arrive in pieces, several may arrive at once)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self._buf += data
        out: list[Any] = []
        pos, buf = 0, self._buf
        while len(buf) - pos >= _HEADER.size:
            (n,) = _HEADER.unpack_from(buf, pos)
            if len(buf) - pos - _HEADER.size < n:
                break
            out.append(pickle.loads(buf[pos + _HEADER.size: pos + _HEADER.size + n]))
            pos += _HEADER.size + n
        if pos:
            del buf[:pos]
        return out


def recv_message(sock: socket.socket, reader: FrameReader) -> Any:
    """Block until one whole message arrived; None at end of file."""
    while True:
        data = sock.recv(1 << 16)
        if not data:
            return None
        msgs = reader.feed(data)
        if msgs:
            assert len(msgs) == 1, "the parent sends nothing before the start reply"
            return msgs[0]


def _build(spec: dict[str, Any]) -> Any:
    module_name, cls_name = spec["cls"].split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(spec["model"], cls.Options.model_validate(spec["options"]))


async def _serve(adapter: Any, sock: socket.socket) -> None:
    from adapters.base import AdapterError

    reader, writer = await asyncio.open_connection(sock=sock)
    tasks: dict[int, asyncio.Task[None]] = {}
    busy = asyncio.Event()

    def send(msg: Any) -> None:
        if not writer.is_closing():
            writer.write(frame(msg))

    async def run(rid: int, spec: Any) -> None:
        try:
            async for ch in adapter.stream(spec):
                send(("chunk", rid, ch.t_ns, ch.n_tokens, ch.text, ch.n_prompt, ch.token_ids))
            send(("stats", adapter.stats()))  # before "done": a caller that saw its stream end sees the engine's state
            send(("done", rid))
        except AdapterError as e:
            send(("stats", adapter.stats()))
            send(("fail", rid, e.kind, str(e)))
        except asyncio.CancelledError:
            pass  # the parent gave up on this request: nothing to send
        except Exception as e:  # an adapter bug fails this request, not the engine
            send(("fail", rid, "engine", f"{type(e).__name__}: {e}"))
        finally:
            tasks.pop(rid, None)

    async def report_stats() -> None:
        notes: tuple[str, ...] = ()
        while True:
            await busy.wait()
            await asyncio.sleep(STATS_INTERVAL_S)
            send(("stats", adapter.stats()))
            if adapter.notes != notes:
                notes = adapter.notes
                send(("notes", notes))
            if not tasks:
                busy.clear()  # one last report after the engine went idle, then quiet

    stats_task = asyncio.create_task(report_stats())
    frames = FrameReader()
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break  # the parent closed the channel or died
            for msg in frames.feed(data):
                if msg[0] == "req":
                    tasks[msg[1]] = asyncio.create_task(run(msg[1], msg[2]))
                    busy.set()
                elif msg[0] == "cancel" and msg[1] in tasks:
                    tasks[msg[1]].cancel()
                elif msg[0] == "close":
                    return
    finally:
        stats_task.cancel()
        for t in list(tasks.values()):
            t.cancel()
        await asyncio.gather(*tasks.values(), stats_task, return_exceptions=True)
        send(("stats", adapter.stats()))
        await adapter.aclose()
        writer.close()


def _serve_batched(adapter: Any, sock: socket.socket) -> None:
    """Read the parent's messages on this thread; the engine thread writes its steps through `send`."""
    lock = threading.Lock()

    def send(msg: Any) -> None:
        data = frame(msg)
        try:
            with lock:
                sock.sendall(data)
        except OSError:
            pass  # the parent is gone: the read below sees end of file and closes the engine

    adapter.open_channel(send)
    frames = FrameReader()
    # Wait in poll() for input, never in a blocking recv(): a thread blocked in recv() is woken each time the
    # client reads a step (the freed send buffer wakes every sleeper on this socket), and on the engine's CPU
    # that took 4% of its time from the steps (benchmarks/RESULTS.md, "the engine process's reader"); poll() is
    # woken for input only (tests/adapters/test_own.py counts the reader's wake-ups).
    inbound = select.poll()
    inbound.register(sock, select.POLLIN)
    try:
        while True:
            inbound.poll()
            data = sock.recv(1 << 16)
            if not data:
                return  # the parent closed the channel or died
            for msg in frames.feed(data):
                if msg[0] == "req":
                    adapter.submit(msg[1], msg[2])
                elif msg[0] == "cancel":
                    adapter.cancel(msg[1])
                elif msg[0] == "close":
                    return
    finally:
        send(("stats", adapter.stats()))


def main(fd: int) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes us
    sock = socket.socket(fileno=fd)
    msg = recv_message(sock, FrameReader())
    if msg is None or msg[0] != "start":
        return 2
    spec = msg[1]
    if spec.get("cpus"):
        from adapters.placement import pin_self

        pin_self(spec["cpus"])
    try:
        adapter = _build(spec)
        info = adapter.start()
    except BaseException as e:
        user = isinstance(e, ValueError | RuntimeError | OSError)
        try:
            reply = frame(("error", type(e).__name__, str(e), user, e if user else None))
        except Exception:  # an exception that does not pickle: its words still cross
            reply = frame(("error", type(e).__name__, str(e), user, None))
        sock.sendall(reply)
        return 1
    sock.sendall(frame(("info", info)))
    try:
        if type(adapter).capabilities.batched_channel:
            _serve_batched(adapter, sock)
        else:
            asyncio.run(_serve(adapter, sock))
    finally:
        adapter.close()
    return 0


if __name__ == "__main__":
    sys.stdout = sys.stderr  # stdout is the log; keep one stream
    code = main(int(sys.argv[1]))
    sys.stderr.flush()
    os._exit(code)  # engines' own threads (OpenMP pools) must not keep a dead client's engine alive
