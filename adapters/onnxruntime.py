"""The `onnxruntime` adapter: onnxruntime-genai's Engine over the exported ONNX model, in-process.

The HF folder is converted on first use (`advisor.convert.convert(..., "onnx")`,
the onnxruntime-genai model builder, cached and logit-checked). One engine
thread owns `og.Engine`: it begins a turn for each new request (token ids,
EOS masked with `min_generated_tokens` for exact lengths), calls `run()` once
per step and hands each TOKEN event to its request's stream, stamped when the
step returns. With a KV-cache (non-paged) export on CPU, onnxruntime-genai
batches with its static scheduler: requests that arrive together decode as
one batch (up to `max_batch`), but a request arriving while a batch runs waits
until that batch finishes. EngineInfo says so (batching="static").
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, ClassVar

from adapters.base import AdapterError, Chunk, EngineInfo, RequestSpec

_DONE = object()


@dataclass
class _Pending:
    req: RequestSpec
    loop: asyncio.AbstractEventLoop
    out: asyncio.Queue
    request: Any = None
    produced: int = 0
    turn: int = 0
    cancelled: bool = False
    cancel_sent: bool = False

    def put(self, item: object) -> None:
        self.loop.call_soon_threadsafe(self.out.put_nowait, item)


class OnnxRuntimeAdapter:
    name: ClassVar[str] = "onnxruntime"

    def __init__(self, model: str | None = None, *, precision: str = "fp32", threads: int | None = None,
                 provider: str = "cpu", max_batch: int = 8, max_length: int | None = None,
                 device: str | None = None, decode_text: bool = True) -> None:
        if device is not None and device.lower() != "auto":  # `advisor bench --device` maps onto the provider
            provider = "cuda" if device.lower().startswith("cuda") else device.lower()
        if provider not in ("cpu", "cuda", "tensorrt"):
            raise ValueError(f"provider must be cpu, cuda or tensorrt, got {provider!r}")
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.model = model
        self.precision = precision
        self.threads = None if threads is None else int(threads)
        self.provider = provider
        self.max_batch = int(max_batch)
        self.max_length = max_length
        self.decode_text = decode_text
        self._engine: Any = None
        self._config: Any = None
        self._ready = threading.Event()
        self._start_error: str | None = None
        self._caps_max_batch = 0
        self._inbox: queue.Queue[_Pending] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._max_len = 0
        self._tok: Any = None
        self._stats: dict[str, float] = {}
        self.keep_token_ids = False  # keep each request's output ids (`advisor verify`); benchmarks leave it off
        self._token_ids: dict[str, list[int]] = {}

    def start(self) -> EngineInfo:
        import onnxruntime_genai as og

        from advisor.convert import ConversionError, convert, normalize_precision
        from own_engine.paths import resolve_model

        src = resolve_model(self.model)
        self.precision = normalize_precision("onnx", self.precision)  # int8 -> q8_0 etc.; refuses unknown ones
        out = convert(src, "onnx", self.precision)  # cached; ConversionError names the fix
        cfg = json.loads((src / "config.json").read_text())
        context = int(cfg.get("max_position_embeddings", 2048))
        # the KV buffer is preallocated to max_length for every batch slot: keep it as tight as the work allows
        self._max_len = min(context, int(self.max_length or context))
        overlay: dict[str, Any] = {"engine": {"static_batching": {"max_batch_size": self.max_batch}},
                                   "search": {"max_length": self._max_len}}
        if self.threads:
            overlay["model"] = {"decoder": {"session_options": {"intra_op_num_threads": self.threads,
                                                                "inter_op_num_threads": 1}}}
        config = og.Config(str(out))
        config.overlay(json.dumps(overlay))
        if self.provider != "cpu":
            config.clear_providers()
            config.append_provider(self.provider if self.provider == "cuda" else "NvTensorRtRtx")
        self._config = config
        if self.decode_text and (src / "tokenizer.json").is_file():
            from tokenizers import Tokenizer

            self._tok = Tokenizer.from_file(str(src / "tokenizer.json"))
        vocab = int(cfg["vocab_size"])
        # og.Engine must be created and driven by one thread: the engine thread owns it from the start
        self._thread = threading.Thread(target=self._run, name="onnxruntime-engine", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            self.close()
            raise ConversionError(f"onnxruntime-genai could not load {out}: {self._start_error[:300]}; reconvert with "
                                  f"`advisor models convert {src} --to onnx --precision {self.precision} --force`")
        self._warm_up(vocab)
        return EngineInfo(
            adapter=self.name, engine="ONNX Runtime GenAI", version=og.__version__, device=self.provider,
            model=str(src), format="onnx", precision=self.precision, batching="static",
            threads=self.threads or os.cpu_count(), kv_cache_dtype="fp32" if self.precision != "fp16" else "fp16",
            max_batch=self._caps_max_batch, vocab_size=vocab, max_model_len=self._max_len,
            pid=os.getpid(), extra={"onnx_dir": str(out), "kv_buffer_tokens": self._max_len,
                                    "onnxruntime": _version("onnxruntime")},
            notes=("onnxruntime-genai static batching: requests arriving together decode as one batch; a request "
                   "arriving while a batch runs waits for that batch to finish",
                   "KV buffer preallocated to max_length per batch slot; memory from RSS only (no KV stats API)"))

    def _warm_up(self, vocab: int) -> None:
        """Two requests through the engine thread (prefill and batched decode), before any timing.

        Run on a private event loop in a helper thread, so start() also works when called from async code.
        """
        async def one(i: int, n: int) -> None:
            spec = RequestSpec(f"warmup-{i}", tuple(t % vocab for t in range(5, 5 + n)), max_tokens=4)
            async for _ in self.stream(spec):
                pass

        async def both() -> None:
            await asyncio.gather(one(0, 8), one(1, 3))

        errors: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(both())
            except BaseException as e:  # re-raised in the caller's thread below
                errors.append(e)

        t = threading.Thread(target=run, name="warm-up")
        t.start()
        t.join()
        if errors:
            raise AdapterError("engine", f"warm-up failed: {errors[0]}") from errors[0]

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def stats(self) -> dict[str, float]:
        return dict(self._stats)

    def token_ids_of(self, request_id: str) -> list[int] | None:
        """Output ids of a finished request, when `keep_token_ids` was on."""
        return self._token_ids.get(request_id)

    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        if self._engine is None or self._thread is None:
            raise AdapterError("engine", "the onnxruntime adapter was not started; call start() first")
        if req.n_in == 0:
            raise AdapterError("refused", "empty prompt: give at least one token id")
        if req.n_in + req.max_tokens > self._max_len:
            raise AdapterError("refused", f"prompt {req.n_in} + max_tokens {req.max_tokens} exceeds max_length "
                                          f"{self._max_len} (raise max_length=, up to the model's context)")
        p = _Pending(req, asyncio.get_running_loop(), asyncio.Queue())
        self._inbox.put(p)
        first = True
        kept = self._token_ids.setdefault(req.request_id, []) if self.keep_token_ids else None
        try:
            while True:
                item = await p.out.get()
                if item is _DONE:
                    return
                if isinstance(item, AdapterError):
                    raise item
                t_ns, ids = item
                if kept is not None:
                    kept.extend(ids)
                text = self._tok.decode(ids) if self._tok is not None else None
                yield Chunk(t_ns, len(ids), text=text, n_prompt=req.n_in if first else None)
                first = False
        finally:
            p.cancelled = True

    def _begin(self, p: _Pending) -> None:
        import numpy as np
        import onnxruntime_genai as og

        req = p.req
        r = self._engine.create_request()
        to = og.TurnOptions(r)
        to.set_max_generated_tokens(req.max_tokens)
        to.set_min_generated_tokens(req.max_tokens if req.ignore_eos else req.min_tokens)
        if req.temperature > 0:
            to.set_do_sample(True)
            to.set_temperature(req.temperature)
            to.set_top_p(req.top_p)
            to.set_top_k(req.top_k)
            if req.seed is not None:
                to.set_seed(int(req.seed))
        else:
            to.set_do_sample(False)
        p.turn = r.begin_turn(np.asarray(req.prompt_ids, dtype=np.int32), to)
        p.request = r

    def _run(self) -> None:
        import onnxruntime_genai as og

        try:
            self._engine = og.Engine(og.Model(self._config))
            self._caps_max_batch = int(self._engine.get_capabilities().configured_max_batch_size)
        except Exception as e:  # reported by start() as an AdapterError naming the model folder
            self._start_error = f"{type(e).__name__}: {e}"
            return
        finally:
            self._ready.set()
        buf = self._engine.create_event_buffer(4 * self.max_batch + 16)
        by_req: dict[int, _Pending] = {}
        while not self._stop.is_set():
            try:
                block = not by_req
                while True:
                    p = self._inbox.get(timeout=0.05) if block else self._inbox.get_nowait()
                    block = False
                    try:
                        self._begin(p)
                        by_req[id(p.request)] = p
                    except Exception as e:  # this request's parameters were refused: fail it, keep serving
                        p.put(AdapterError("refused", f"onnxruntime-genai refused the request: {e}"))
            except queue.Empty:
                pass
            if not by_req:
                continue
            for p in list(by_req.values()):
                if p.cancelled and not p.cancel_sent and p.request is not None:
                    p.request.cancel_turn(p.turn)
                    p.cancel_sent = True
            try:
                self._engine.run(buf)
            except Exception as e:  # the engine failed: every request in flight fails, the thread goes on
                for p in by_req.values():
                    p.put(AdapterError("engine", f"onnxruntime-genai run failed: {e}"))
                by_req.clear()
                continue
            t_ns = time.perf_counter_ns()
            tokens: dict[int, list[int]] = {}
            for k in range(len(buf)):
                ev = buf[k]
                key = id(ev.request)
                p = by_req.get(key)
                if p is None:
                    continue
                if ev.flags & og.EngineEventFlags.TOKEN:
                    tokens.setdefault(key, []).append(int(ev.token))
                if ev.flags & og.EngineEventFlags.FAILED:
                    p.put(AdapterError("engine", f"onnxruntime-genai failed the request: {ev.error_code}"))
                    del by_req[key]
                elif ev.flags & og.EngineEventFlags.TURN_FINISHED:
                    if key in tokens:
                        p.produced += len(tokens[key])
                        p.put((t_ns, tokens.pop(key)))
                    if not p.cancelled:
                        p.put(_DONE if p.produced == p.req.max_tokens else AdapterError(
                            "engine", f"onnxruntime-genai stopped after {p.produced} of {p.req.max_tokens} tokens "
                                      f"({ev.finish_reason.name})"))
                    p.request.close()
                    del by_req[key]
            for key, ids in tokens.items():
                p = by_req[key]
                p.produced += len(ids)
                p.put((t_ns, ids))
            self._stats = {"running": float(len(by_req)), "waiting": float(self._inbox.qsize())}
        for p in by_req.values():  # closed while requests were in flight
            p.put(AdapterError("cancelled", "the onnxruntime adapter was closed"))
        by_req.clear()
        self._engine = None  # released by its owner thread


def _version(pkg: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None
