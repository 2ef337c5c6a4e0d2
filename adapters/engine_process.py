"""Engines advisor loads itself (own, llama_cpp, onnxruntime, openvino) run in a child process of their own.

A Python-heavy engine step holds the interpreter's lock; on the client's
interpreter it would delay the load generator's sends and the stamping of
chunks (vLLM keeps its EngineCore apart from its frontend for the same
reason). `EngineProcess` starts `adapters.engine_worker` with one end of a
socket pair, hands it the adapter class, model and options, and from then on
is an ordinary adapter: each request goes over the socket and each chunk
that comes back is stamped here, on arrival, like an HTTP chunk; the
engine's own stamp is kept as `Chunk.t_engine_ns` (both use the system's
monotonic clock). The engine's CPUs and threads come from
`adapters.placement`; `EngineInfo.pid` is the engine process, so memory and
CPU telemetry follow the engine. If the client dies, the engine sees end of
file and exits; if the engine dies, every request in flight fails with the
tail of its log.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from adapters.base import Adapter, AdapterError, Capabilities, Chunk, EngineInfo, EngineUnavailable, RequestSpec
from adapters.engine_worker import FrameReader, frame, recv_message
from adapters.placement import plan

_DONE = object()
_PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)
CLOSE_TIMEOUT_S = 30.0


class EngineProcess(Adapter):
    """An in-process adapter class, run in a child process; looks like that adapter to everyone else."""

    capabilities = Capabilities(served=False, per_chunk_tokens=True, own_process=True)

    def __init__(self, cls: type[Adapter], model: str | None, options: Any) -> None:
        self.name = cls.name  # type: ignore[misc]  # the engine's name, per instance
        self.Options = cls.Options  # type: ignore[misc]
        super().__init__(model, options)
        self.inner = cls
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._log: Path | None = None
        self._frames = FrameReader()
        self._streams: dict[int, asyncio.Queue[Any]] = {}
        self._n_prompt: dict[int, int] = {}  # rid -> prompt tokens, until its first chunk (batched channel)
        self._next_rid = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._out = bytearray()  # frames not yet written (the socket was full)
        self._stats: dict[str, float] = {}
        self._dead: str | None = None

    # ---- lifecycle ---------------------------------------------------------------------------
    def _start(self) -> EngineInfo:
        place = plan(self.options.threads)
        options = self.options.model_copy(update={"threads": place.engine_threads, "isolate": False})
        parent, child = socket.socketpair()
        fd, log = tempfile.mkstemp(prefix=f"advisor-engine-{self.name}-", suffix=".log")
        self._log = Path(log)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (_PROJECT_ROOT, os.environ.get("PYTHONPATH"))
                                                            if p)}
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", "adapters.engine_worker", str(child.fileno())],
                                          pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=fd,
                                          stderr=subprocess.STDOUT, env=env, start_new_session=True)
        finally:
            os.close(fd)
            child.close()
        self._sock = parent
        try:
            parent.sendall(frame(("start", {"cls": f"{self.inner.__module__}:{self.inner.__qualname__}",
                                            "model": self.model, "options": options.model_dump(),
                                            "cpus": list(place.engine_cpus) if place.engine_cpus else None})))
            reply = self._wait_reply()
        except BaseException:  # Ctrl-C while the model loads, or a failed start: never leave the child behind
            self._close()
            raise
        parent.setblocking(False)
        info: EngineInfo = reply[1]
        placement = {**place.to_dict(), "engine_pid": self._proc.pid, "isolated": True}
        return replace(info, pid=self._proc.pid, placement=placement)

    def _wait_reply(self) -> Any:
        """The child's answer to "start": its EngineInfo, or its error raised here with the same words."""
        assert self._sock is not None and self._proc is not None
        self._sock.settimeout(1.0)
        while True:
            try:
                reply = recv_message(self._sock, self._frames)
                break
            except TimeoutError:
                if self._proc.poll() is not None:
                    reply = None
                    break
        if reply is None:
            raise EngineUnavailable(f"engine '{self.name}' exited while starting; {self._exit_reason()}")
        if reply[0] == "error":
            _, type_name, message, user, exc = reply
            if isinstance(exc, BaseException):
                raise exc  # the engine's own error (ConversionError, EngineUnavailable, ...), same class and words
            if user:
                raise EngineUnavailable(message)
            raise EngineUnavailable(f"engine '{self.name}' failed to start: {type_name}: {message} (a bug: "
                                    f"see {self._log})")
        return reply

    def _close(self) -> None:
        proc, sock = self._proc, self._sock
        self._proc = self._sock = None
        self._fail_all(AdapterError("cancelled", f"the {self.name} engine was closed"))
        if sock is not None:
            try:
                sock.setblocking(True)
                sock.settimeout(5)
                sock.sendall(bytes(self._out) + frame(("close",)))
            except OSError:
                pass  # the engine is gone already; closing the socket below ends it anyway
            sock.close()
        if proc is not None:
            try:
                proc.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._out.clear()
        self._loop = None
        self._dead = None
        self._stats = {}

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop and self._sock is not None:
            loop.remove_reader(self._sock.fileno())
            loop.remove_writer(self._sock.fileno())
            self._loop = None

    def stats(self) -> dict[str, float]:
        return dict(self._stats)

    # ---- requests ----------------------------------------------------------------------------
    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        if self._dead is not None:
            raise AdapterError("engine", self._dead)
        if self._sock is None:
            raise AdapterError("engine", f"the {self.name} adapter was not started; call start() first")
        self._attach(asyncio.get_running_loop())
        rid = self._next_rid
        self._next_rid += 1
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._streams[rid] = queue
        self._n_prompt[rid] = req.n_in
        self._send(("req", rid, req))
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self._n_prompt.pop(rid, None)
            if self._streams.pop(rid, None) is not None and self._sock is not None:
                self._send(("cancel", rid))  # abandoned (timeout, run stopped): free its slot in the engine

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the engine's messages on this event loop (each run has its own loop)."""
        if self._loop is loop:
            return
        assert self._sock is not None
        self._loop = loop
        loop.add_reader(self._sock.fileno(), self._on_readable)

    def _send(self, msg: Any) -> None:
        """Queue a frame for the engine without blocking the loop."""
        self._out += frame(msg)
        self._flush()

    def _flush(self) -> None:
        if self._sock is None or not self._out:
            return
        try:
            n = self._sock.send(self._out)
        except BlockingIOError:
            n = 0
        except OSError as e:
            self._die(f"the {self.name} engine's channel broke ({e}); {self._exit_reason()}")
            return
        del self._out[:n]
        if self._loop is not None:
            if self._out:
                self._loop.add_writer(self._sock.fileno(), self._flush)
            else:
                self._loop.remove_writer(self._sock.fileno())

    def _on_readable(self) -> None:
        t_ns = time.perf_counter_ns()  # arrival on the client side: one stamp for everything this read brought
        assert self._sock is not None
        try:
            data = self._sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError as e:
            data, err = b"", e
        else:
            err = None
        if not data:
            self._die(f"the {self.name} engine process ended ({err or 'end of file'}); {self._exit_reason()}")
            return
        for msg in self._frames.feed(data):
            kind = msg[0]
            if kind == "step":  # one engine step's tokens, every request's (the batched channel)
                self._on_step(t_ns, *msg[1:])
            elif kind == "chunk":
                _, rid, t_engine, n, text, n_prompt, ids = msg
                q = self._streams.get(rid)
                if q is not None:
                    q.put_nowait(Chunk(t_ns, n, text, n_prompt=n_prompt, token_ids=ids, t_engine_ns=t_engine,
                                       token_source="engine"))
            elif kind == "done":
                q = self._streams.pop(msg[1], None)
                if q is not None:
                    q.put_nowait(_DONE)
            elif kind == "fail":
                q = self._streams.pop(msg[1], None)
                if q is not None:
                    q.put_nowait(AdapterError(msg[2], msg[3]))
            elif kind == "stats":
                self._stats = msg[1]
            elif kind == "notes":
                self._notes[:] = list(msg[1])

    def _on_step(self, t_ns: int, t_engine: int, items: list[tuple[int, list[int], bool]],
                 stats: dict[str, float] | None) -> None:
        if stats is not None:  # before the tokens: a caller that saw its last token sees the engine's state
            self._stats = stats
        streams, n_prompt = self._streams, self._n_prompt
        for rid, ids, finished in items:
            q = streams.get(rid)
            if q is None:
                continue
            q.put_nowait(Chunk(t_ns, len(ids), None, n_prompt=n_prompt.pop(rid, None), token_ids=tuple(ids),
                               t_engine_ns=t_engine, token_source="engine"))
            if finished:
                del streams[rid]
                q.put_nowait(_DONE)

    def _die(self, reason: str) -> None:
        self._dead = reason
        if self._loop is not None and self._sock is not None:
            self._loop.remove_reader(self._sock.fileno())
            self._loop.remove_writer(self._sock.fileno())
        self._fail_all(AdapterError("engine", reason))

    def _fail_all(self, error: AdapterError) -> None:
        streams, self._streams = self._streams, {}
        self._n_prompt.clear()
        for q in streams.values():
            q.put_nowait(error)

    def _exit_reason(self) -> str:
        code = None
        if self._proc is not None:
            try:
                code = self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        tail = ""
        if self._log is not None and self._log.is_file():
            lines = self._log.read_text(errors="replace").strip().splitlines()[-8:]
            tail = "\n".join(lines)
        status = f"exit code {code}" if code is not None else "still running"
        return f"engine process {status}; its log {self._log}" + (f" ends with:\n{tail}" if tail else " is empty")
