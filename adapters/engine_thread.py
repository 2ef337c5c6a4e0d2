"""What the in-process CPU-engine adapters (llama_cpp, onnxruntime, openvino) share.

Each of them runs its engine in one thread it owns: `stream()` puts a
`Pending` record into that thread's inbox and yields `Chunk`s from the
record's asyncio.Queue, which the engine thread fills with `(t_ns, new_ids)`
items, then `DONE` or an `AdapterError`. `EngineThreadMixin` holds that
plumbing (inbox, stop event, stats, join); it never
looks at which engine it serves. Each adapter keeps its own `_start()`, its
engine loop `_run()` and its own `Pending` subclass for per-engine state.
`convert_on_first_use` and `load_tokenizer` are the model preparation the
three share (HF folder -> cached engine format, tokenizer for chunk text).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.base import AdapterError, Chunk, RequestSpec
from model_cache import tokenizer
from own_engine.core.loop_queue import LoopQueue

DONE = object()  # the engine thread's last item for a request that produced all its tokens


@dataclass
class Pending(LoopQueue):
    """One request in flight: made inside the requesting coroutine (its loop and queue are that coroutine's).

    The engine thread `put`s `(t_ns, ids)`, `DONE` or an AdapterError (own_engine.core.loop_queue).
    """

    req: RequestSpec
    produced: int = 0
    cancelled: bool = False  # set when the consumer stops reading; the engine thread then drops the request


def convert_on_first_use(model: str | None, fmt: str,
                         precision: str) -> tuple[Path, str, Path, dict[str, Any], float | None]:
    """The HF folder, the normalised precision, its `fmt` conversion (cached, logit-checked), its config.json, and
    the seconds spent converting (None when the cached conversion was used: EngineInfo.convert_s).

    Raises ConversionError (naming the fix) when the conversion fails, ValueError for an unknown precision.
    """
    from adapters.formats import ensure_converted, normalize_precision
    from model_cache.resolve import resolve_model

    src = resolve_model(model)
    precision = normalize_precision(fmt, precision)  # int8 -> q8_0 etc.; refuses unknown ones
    t0 = time.perf_counter()
    done = ensure_converted(src, fmt, precision)  # type: ignore[arg-type]
    convert_s = round(time.perf_counter() - t0, 4) if done.fresh else None
    return src, precision, done.path, json.loads((src / "config.json").read_text()), convert_s


def load_tokenizer(model_dir: Path) -> Any:
    """The model's `tokenizer.json` (to decode chunk text), or None when the folder has none."""
    return tokenizer.load_tokenizer(model_dir)


class EngineThreadMixin:
    """Inbox, stream, stats and shutdown of an adapter whose engine runs in one thread it owns.

    The adapter calls `_init_engine_thread()` in its constructor, defines `_admit(req)` (refuse what its
    engine cannot serve, make the Pending) and `_run()` (the engine loop: read `self._inbox` until `self._stop`
    is set, `put()` results on each Pending, keep `self._stats` current), and starts the loop with
    `_start_engine_thread(name)`.
    """

    def _init_engine_thread(self) -> None:
        self._inbox: queue.Queue[Pending] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._stats: dict[str, float] = {}
        self._tok: Any = None  # a tokenizers.Tokenizer when chunks carry decoded text

    def _run(self) -> None:
        raise NotImplementedError  # the adapter's engine loop

    def _admit(self, req: RequestSpec) -> Pending:
        raise NotImplementedError  # the adapter's checks of `req` (started? fits?) and its Pending for it

    def _start_engine_thread(self, thread_name: str) -> None:
        self._stop.clear()  # a closed adapter can be started again
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()

    def _stop_engine_thread(self) -> None:
        """Ask the engine loop to end (it fails what is still in flight) and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _take_new(self, wait: bool, most: int | None = None) -> list[Pending]:
        """For the engine loop: the requests in the inbox (at most `most`); with `wait`, up to 50 ms for the first."""
        new: list[Pending] = []
        try:
            while most is None or len(new) < most:
                new.append(self._inbox.get(timeout=0.05) if wait and not new else self._inbox.get_nowait())
        except queue.Empty:
            pass
        return new

    def stats(self) -> dict[str, float]:
        return dict(self._stats)

    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        """Send `req` to the engine thread and yield its chunks until DONE; an AdapterError item is raised."""
        p = self._admit(req)
        self._inbox.put(p)
        first = True
        try:
            while True:
                item = await p.queue.get()
                if item is DONE:
                    return
                if isinstance(item, AdapterError):
                    raise item
                t_ns, ids = item
                text = self._tok.decode(ids) if self._tok is not None else None
                yield Chunk(t_ns, len(ids), text=text, n_prompt=req.n_in if first else None, token_ids=tuple(ids),
                            t_engine_ns=t_ns, token_source="engine")
                first = False
        finally:
            p.cancelled = True
