"""AsyncLLMEngine: the asynchronous front. Requests arrive at any time and stream tokens back.

One background thread owns the engine (continuous or static) and loops
step() while there is work; coroutines submit requests and receive
`(t_ns, new_token_ids)` where `t_ns = time.perf_counter_ns()` is taken on the
engine side right after the step that produced them. Hand-off to the event
loop is one `loop.call_soon_threadsafe` per step and loop (not per token), so
a step of many sequences wakes the client once. Requests from many coroutines
join the same engine steps. Engine errors reach every waiting coroutine as
exceptions.

A second way out, for a front in a process of its own (adapters.engine_worker): `attach_sink(sink)`, then
`submit(key, ...)` / `cancel(key)` from any thread. The engine thread then hands each step's tokens of those
requests to `sink.step(t_ns, [(key, ids, finished), ...], stats)` in one call per step, on its own thread (no
event loop, no per-token wake-up), as vLLM's EngineCore sends one batched output message per step. `stats` is
the engine's gauges when a request finished or STATS_INTERVAL_S passed, else None.

Build the engine with `AsyncLLMEngine(factory=...)` where it will serve: the
factory runs on the engine's own thread, so the model is loaded, its linears
packed and its OpenMP team started on the thread that steps it. An engine
built on another thread (the event loop's) and stepped on this one ran each
decode step of small-100m at 44-58 ms instead of 27-33 ms on the 2-core CI
machine (benchmarks/history/own_serving.md, "own_engine's serving path").
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from own_engine.core.loop_queue import LoopQueue, deliver_all
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.sequence import StepOutput

STATS_INTERVAL_S = 0.25  # the gauges are refreshed at most this often while steps run (and when a request ends)


class StepSink(Protocol):
    def step(self, t_ns: int, items: list[tuple[int, list[int], bool]], stats: dict[str, float] | None) -> None: ...
    def fail(self, key: int, error: BaseException) -> None: ...


class SyncEngine(Protocol):
    def add_request(self, prompt_ids: list[int], params: SamplingParams) -> int: ...
    def abort(self, seq_id: int) -> None: ...
    def has_unfinished(self) -> bool: ...
    def step(self) -> list[StepOutput]: ...
    def stats(self) -> dict[str, float]: ...


class EngineDead(RuntimeError):
    """The engine thread has stopped (closed or crashed); the message says why."""


@dataclass
class _Stream(LoopQueue):
    seq_id: int | None = None
    done: bool = False


@dataclass
class _Inbox:
    adds: list[tuple[list[int], SamplingParams, _Stream | int]] = field(default_factory=list)  # a stream or a key
    aborts: list[_Stream | int] = field(default_factory=list)


class AsyncLLMEngine:
    def __init__(self, engine: SyncEngine | None = None, *, factory: Callable[[], SyncEngine] | None = None) -> None:
        """Serve `engine`, or the engine `factory()` builds on the engine thread (raises what the factory raised)."""
        if (engine is None) == (factory is None):
            raise TypeError("AsyncLLMEngine takes an engine or a factory, not both or neither")
        self._cv = threading.Condition()
        self._inbox = _Inbox()
        self._streams: dict[int, _Stream] = {}
        self._sink: StepSink | None = None
        self._keys: dict[int, int] = {}  # seq_id -> the sink's key
        self._seq_of_key: dict[int, int] = {}
        self._stats_t = 0.0
        self._stopping = False
        self._error: BaseException | None = None
        self._stats: dict[str, float] = {}
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(factory or (lambda: engine), ready), name="own_engine",
                                        daemon=True)
        self._thread.start()
        try:
            ready.wait()
        except BaseException:  # Ctrl-C while the model loads: the thread stops once the build returns
            self.close(timeout_s=0)
            raise
        if self._error is not None:
            raise self._error

    def _run(self, factory: Callable[[], SyncEngine], ready: threading.Event) -> None:
        try:
            self.engine = factory()
            self._stats = dict(self.engine.stats())
        except BaseException as e:
            self._error = e
            return
        finally:
            ready.set()
        self._loop()

    async def generate(self, prompt_ids: list[int], params: SamplingParams,
                       request_id: str | None = None) -> AsyncIterator[tuple[int, list[int]]]:
        """Stream `(t_ns, new_token_ids)` until the request finishes; raises what the engine raised."""
        stream = _Stream()
        with self._cv:
            if self._stopping or self._error is not None:
                raise EngineDead(f"own_engine is not running ({self._error or 'closed'})")
            self._inbox.adds.append((list(prompt_ids), params, stream))
            self._cv.notify()
        try:
            while True:
                item = await stream.queue.get()
                if isinstance(item, BaseException):
                    raise item
                t_ns, ids, finished = item
                yield t_ns, ids
                if finished:
                    stream.done = True
                    return
        finally:
            if not stream.done:  # cancelled or abandoned: free its slot in the engine
                with self._cv:
                    self._inbox.aborts.append(stream)
                    self._cv.notify()

    def attach_sink(self, sink: StepSink) -> None:
        """Send the tokens of requests `submit`ted from now on to `sink`, one call per step (see module doc)."""
        self._sink = sink

    def submit(self, key: int, prompt_ids: list[int], params: SamplingParams) -> None:
        """Queue a request whose tokens go to the sink under `key` (any thread); a refusal goes to `sink.fail`."""
        assert self._sink is not None, "attach_sink() first"
        with self._cv:
            if self._stopping or self._error is not None:
                error = EngineDead(f"own_engine is not running ({self._error or 'closed'})")
            else:
                self._inbox.adds.append((list(prompt_ids), params, key))
                self._cv.notify()
                return
        self._sink.fail(key, error)

    def cancel(self, key: int) -> None:
        """Drop the request submitted under `key` (any thread; unknown or finished keys are ignored)."""
        with self._cv:
            self._inbox.aborts.append(key)
            self._cv.notify()

    def stats(self) -> dict[str, float]:
        """The engine's gauges as of its last step (read without stopping the engine)."""
        return dict(self._stats)

    def close(self, timeout_s: float = 10.0) -> None:
        with self._cv:
            self._stopping = True
            self._cv.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        clock = getattr(self.engine, "clock", None)  # LLMEngine's StepClock: the step starts and ends here
        while True:
            with self._cv:
                while not (self._inbox.adds or self._inbox.aborts or self._stopping or self.engine.has_unfinished()):
                    self._cv.wait()
                if self._stopping:
                    break
                inbox, self._inbox = self._inbox, _Inbox()
            if clock is not None:
                clock.begin(front=True)
            for prompt, params, target in inbox.adds:
                try:
                    seq_id = self.engine.add_request(prompt, params)
                except ValueError as e:  # refused: only this request fails
                    if isinstance(target, int):
                        self._sink.fail(target, e)  # type: ignore[union-attr]
                    else:
                        target.put(e)
                    continue
                if isinstance(target, int):
                    self._keys[seq_id] = target
                    self._seq_of_key[target] = seq_id
                else:
                    target.seq_id = seq_id
                    self._streams[seq_id] = target
            for target in inbox.aborts:
                if isinstance(target, int):
                    seq = self._seq_of_key.pop(target, None)
                    if seq is not None:
                        del self._keys[seq]
                        self.engine.abort(seq)
                elif target.seq_id is not None and self._streams.pop(target.seq_id, None) is not None:
                    self.engine.abort(target.seq_id)
            if not self.engine.has_unfinished():
                if clock is not None:
                    clock.cancel()
                self._stats = dict(self.engine.stats())
                if self._sink is not None:  # gone idle (a cancel, a refusal): the sink's reader sees it too
                    self._sink.step(time.perf_counter_ns(), [], self._stats)
                continue
            try:
                outputs = self.engine.step()
            except BaseException as e:  # the engine is in an unknown state: fail everyone, stop
                self._fail_all(e)
                return
            t_ns = time.perf_counter_ns()
            # before delivery: a caller that saw its last token sees it done; else at most every STATS_INTERVAL_S
            stats = None
            if any(finished for _, _, finished in outputs) or t_ns - self._stats_t > STATS_INTERVAL_S * 1e9:
                stats = self._stats = dict(self.engine.stats())
                self._stats_t = t_ns
            if self._keys:
                outputs = self._to_sink(outputs, t_ns, stats)
            if outputs:
                self._deliver(outputs, t_ns)
            if clock is not None:
                clock.handoff_done()
        self._fail_all(EngineDead("own_engine was closed while the request was running"))

    def _to_sink(self, outputs: list[StepOutput], t_ns: int, stats: dict[str, float] | None) -> list[StepOutput]:
        """The sink's requests' tokens to the sink in one call; the other outputs (streams') are returned."""
        keys, mine, rest = self._keys, [], []
        for out in outputs:
            key = keys.get(out[0])
            if key is None:
                rest.append(out)
                continue
            mine.append((key, out[1], out[2]))
            if out[2]:
                del keys[out[0]]
                del self._seq_of_key[key]
        if mine:
            self._sink.step(t_ns, mine, stats)  # type: ignore[union-attr]
        return rest

    def _deliver(self, outputs: list[StepOutput], t_ns: int) -> None:
        """One step's tokens to their streams, one hand-off per event loop; abort streams whose loop is gone."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Stream, Any]]] = {}
        for seq_id, ids, finished in outputs:
            stream = self._streams.get(seq_id)
            if stream is None:
                continue
            if finished:
                del self._streams[seq_id]
            by_loop.setdefault(stream.loop, []).append((stream, (t_ns, ids, finished)))
        for loop, items in by_loop.items():
            if not deliver_all(loop, items):
                for stream, (_, _, finished) in items:
                    if not finished and stream.seq_id is not None:
                        del self._streams[stream.seq_id]
                        self.engine.abort(stream.seq_id)

    def _fail_all(self, error: BaseException) -> None:
        with self._cv:
            self._error = error
            pending = [s for _, _, s in self._inbox.adds]
            self._inbox = _Inbox()
        streams = [*self._streams.values(), *(s for s in pending if not isinstance(s, int))]
        keys = [*self._keys.values(), *(s for s in pending if isinstance(s, int))]
        for stream in streams:
            stream.put(error)
        self._streams.clear()
        self._keys.clear()
        self._seq_of_key.clear()
        for key in keys:
            self._sink.fail(key, error)  # type: ignore[union-attr]
