"""The `onnxruntime` adapter: onnxruntime-genai's Engine over the exported ONNX model, in-process.

The HF folder is converted on first use (`adapters.formats.convert(..., "onnx")`,
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

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from adapters.base import Adapter, AdapterError, Capabilities, EngineInfo, InProcessOptions, RequestSpec, VerifyCase
from adapters.engine_thread import DONE, EngineThreadMixin, Pending, convert_on_first_use, load_tokenizer
from adapters.formats import checked_precision, limits


@dataclass
class _Pending(Pending):
    request: Any = None  # its og.Request, once the engine thread has begun its turn
    turn: int = 0
    cancel_sent: bool = False


class OnnxRuntimeOptions(InProcessOptions):
    precision: str = Field("fp32", description="ONNX weights: fp32, int8 (q8_0), int4 (q4_0)")
    provider: Literal["cpu", "cuda", "tensorrt"] = Field("cpu", description="execution provider")
    max_length: int | None = Field(None, ge=16, description="KV buffer per sequence (default: the model's context)")
    decode_text: bool = Field(True, description="decode each chunk's text with the model's tokenizer")

    @field_validator("precision")
    @classmethod
    def _known_precision(cls, v: str) -> str:
        return checked_precision("onnx", v)


class OnnxRuntimeAdapter(EngineThreadMixin, Adapter[OnnxRuntimeOptions]):
    name: ClassVar[str] = "onnxruntime"
    Options: ClassVar[type[OnnxRuntimeOptions]] = OnnxRuntimeOptions
    capabilities: ClassVar[Capabilities] = Capabilities(
        served=False, per_chunk_tokens=True, own_process=True,
        verify=(VerifyCase("onnx", "fp32", strict=True), VerifyCase("onnx", "int8"), VerifyCase("onnx", "int4")))

    def __init__(self, model: str | None = None, options: OnnxRuntimeOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.options
        provider = o.provider
        if o.device.lower() != "auto":  # `advisor bench --device` maps onto the provider
            provider = "cuda" if o.device.lower().startswith("cuda") else o.device.lower()
        if provider not in ("cpu", "cuda", "tensorrt"):
            raise ValueError(f"provider must be cpu, cuda or tensorrt, got {provider!r}")
        self.precision = o.precision
        self.threads = o.threads
        self.provider = provider
        self.max_batch = o.max_batch or 8
        self.max_length = o.max_length
        self.decode_text = o.decode_text
        self._engine: Any = None
        self._config: Any = None
        self._ready = threading.Event()
        self._start_error: str | None = None
        self._caps_max_batch = 0
        self._max_len = 0
        self._init_engine_thread()

    def _start(self) -> EngineInfo:
        import onnxruntime_genai as og

        from adapters.formats import ConversionError

        src, self.precision, out, cfg, convert_s = convert_on_first_use(self.model, "onnx", self.precision)
        lim = limits.onnxruntime_genai(cfg, self.precision)
        context = lim.max_context
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
        self._tok = load_tokenizer(src) if self.decode_text else None
        vocab = int(cfg["vocab_size"])
        # og.Engine must be created and driven by one thread: the engine thread owns it from the start
        self._ready.clear()
        self._start_error = None
        self._start_engine_thread("onnxruntime-engine")
        self._ready.wait()
        if self._start_error is not None:
            self._close()
            raise ConversionError(f"onnxruntime-genai could not load {out}: {self._start_error[:300]}; reconvert with "
                                  f"`advisor models convert {src} --to onnx --precision {self.precision} --force`")
        return EngineInfo(
            convert_s=convert_s,
            adapter=self.name, engine="ONNX Runtime GenAI", version=og.__version__, device=self.provider,
            model=str(src), format="onnx", precision=self.precision, batching="static",
            threads=self.threads or os.cpu_count(), kv_cache_dtype="fp32" if self.precision != "fp16" else "fp16",
            max_batch=self._caps_max_batch, vocab_size=vocab, max_model_len=self._max_len,
            pid=os.getpid(), extra={"onnx_dir": str(out), "kv_buffer_tokens": self._max_len,
                                    "onnxruntime": _version("onnxruntime")},
            notes=(*lim.notes, "onnxruntime-genai static batching: requests arriving together decode as one batch; a request "
                   "arriving while a batch runs waits for that batch to finish",
                   "KV buffer preallocated to max_length per batch slot; memory from RSS only (no KV stats API)"))

    def _close(self) -> None:
        self._stop_engine_thread()

    def _admit(self, req: RequestSpec) -> _Pending:
        if self._engine is None or self._thread is None:
            raise AdapterError("engine", "the onnxruntime adapter was not started; call start() first")
        self.refuse_unservable(req, self._max_len, f"max_length {self._max_len} (raise max_length=, up to the "
                                                    "model's context)")
        return _Pending(req)

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
            for p in self._take_new(wait=not by_req):
                assert isinstance(p, _Pending)
                try:
                    self._begin(p)
                    by_req[id(p.request)] = p
                except Exception as e:  # this request's parameters were refused: fail it, keep serving
                    p.put(AdapterError("refused", f"onnxruntime-genai refused the request: {e}"))
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
                        p.put(DONE if p.produced == p.req.max_tokens else AdapterError(
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
