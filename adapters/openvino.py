"""The `openvino` adapter: openvino-genai's ContinuousBatchingPipeline, in-process, on an OpenVINO IR.

The HF folder is converted on first use (`adapters.formats.convert(..., "openvino")`,
cached and logit-checked). One engine thread owns the pipeline: it admits new
requests between steps (`add_request` with token ids), calls `step()`, and
reads each request's new tokens right after the step that produced them, so
overlapping requests are batched the way openvino-genai batches them
(continuous batching over a paged KV cache). Chunk timestamps are taken in
that thread; one chunk per step per request. Prefix caching is off so every
request does its full prefill (equal work across engines).
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from adapters.base import Adapter, AdapterError, Capabilities, EngineInfo, InProcessOptions, RequestSpec, VerifyCase
from adapters.engine_thread import DONE, EngineThreadMixin, Pending, convert_on_first_use, load_tokenizer
from adapters.formats import checked_precision, limits


@dataclass
class _Pending(Pending):
    handle: Any = None  # its openvino-genai GenerationHandle, once added to the pipeline


class OpenVINOOptions(InProcessOptions):
    precision: str = Field("fp32", description="IR weights: fp32, fp16")
    kv_cache_precision: Literal["f32", "f16", "bf16", "u8", "u4"] = Field(
        "f32", description="KV cache precision (OpenVINO's own default u8 changes greedy output)")
    cache_size_gb: float = Field(1.0, gt=0, description="paged KV cache size in GiB")
    max_num_batched_tokens: int = Field(2048, ge=1, description="prefill token budget per step")
    decode_text: bool = Field(True, description="decode each chunk's text with the model's tokenizer")

    @field_validator("precision")
    @classmethod
    def _known_precision(cls, v: str) -> str:
        return checked_precision("openvino", v)


class OpenVINOAdapter(EngineThreadMixin, Adapter[OpenVINOOptions]):
    name: ClassVar[str] = "openvino"
    Options: ClassVar[type[OpenVINOOptions]] = OpenVINOOptions
    capabilities: ClassVar[Capabilities] = Capabilities(
        served=False, per_chunk_tokens=True, own_process=True,
        # fp16 weights, fp32 compute (INFERENCE_PRECISION_HINT): must agree token for token too
        verify=(VerifyCase("openvino", "fp32", strict=True), VerifyCase("openvino", "fp16", strict=True)))

    @classmethod
    def verify_options(cls, case: VerifyCase) -> dict[str, Any]:
        # agreement is about the weights' format, not a lossy KV cache
        return {"precision": case.precision, "kv_cache_precision": "f32"}

    def __init__(self, model: str | None = None, options: OpenVINOOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.options
        self.precision = o.precision
        self.threads = o.threads
        self.kv_cache_precision = o.kv_cache_precision
        self.device = "CPU" if o.device.lower() == "auto" else o.device.upper()  # OpenVINO spells devices in capitals
        self.max_batch = o.max_batch or 16
        self.cache_size_gb = o.cache_size_gb
        self.max_num_batched_tokens = o.max_num_batched_tokens
        self.decode_text = o.decode_text
        self._pipe: Any = None
        self._ids = itertools.count()
        self._max_len = 0
        self._init_engine_thread()

    # ---- lifecycle -------------------------------------------------------------------------------
    def _start(self) -> EngineInfo:
        import openvino_genai as ov_genai

        from adapters.formats import ConversionError
        from adapters.formats.openvino import compile_config

        src, self.precision, ir, cfg, convert_s = convert_on_first_use(self.model, "openvino", self.precision)
        lim = limits.openvino(cfg, self.precision)
        self._max_len = lim.max_context  # the trained context, or a sliding window
        sc = ov_genai.SchedulerConfig()
        sc.cache_size = max(1, int(round(self.cache_size_gb)))
        sc.max_num_seqs = self.max_batch
        sc.max_num_batched_tokens = max(self.max_num_batched_tokens, self._max_len)
        sc.enable_prefix_caching = False  # equal work: no silent reuse of an earlier prompt's KV
        sc.dynamic_split_fuse = True
        props = compile_config(self.precision, self.kv_cache_precision, self.threads)
        try:
            self._pipe = ov_genai.ContinuousBatchingPipeline(str(ir), sc, self.device, props)
        except RuntimeError as e:  # a damaged cached IR: the fix is to reconvert
            raise ConversionError(f"openvino-genai could not load {ir}: {str(e)[:300]}; reconvert with "
                                  f"`advisor models convert {src} --to openvino --precision {self.precision} --force`") from e
        self._tok = load_tokenizer(src) if self.decode_text else None
        self._start_engine_thread("openvino-engine")
        threads = self.threads or os.cpu_count()
        return EngineInfo(
            convert_s=convert_s,
            adapter=self.name, engine="OpenVINO GenAI", version=ov_genai.__version__.split("-")[0],
            device=self.device.lower(), model=str(src), format="openvino-ir", precision=self.precision,
            batching="continuous", threads=threads, kv_cache_dtype=self.kv_cache_precision,
            max_batch=self.max_batch, vocab_size=int(cfg["vocab_size"]), max_model_len=self._max_len,
            pid=os.getpid(), extra={"ir": str(ir), "cache_size_gb": sc.cache_size, "prefix_caching": False,
                                    "max_num_batched_tokens": sc.max_num_batched_tokens, "plugin_config": props},
            notes=(*lim.notes, "ContinuousBatchingPipeline: overlapping requests share decode steps (paged KV cache)"))

    def _close(self) -> None:
        self._stop_engine_thread()
        self._pipe = None

    # ---- requests --------------------------------------------------------------------------------
    def _admit(self, req: RequestSpec) -> _Pending:
        if self._pipe is None:
            raise AdapterError("engine", "the openvino adapter was not started; call start() first")
        self.refuse_unservable(req, self._max_len, f"the model's context of {self._max_len} tokens")
        return _Pending(req)

    def _config(self, req: RequestSpec) -> Any:
        import openvino_genai as ov_genai

        gc = ov_genai.GenerationConfig()
        gc.max_new_tokens = req.max_tokens
        gc.min_new_tokens = req.max_tokens if req.ignore_eos else req.min_tokens
        gc.ignore_eos = req.ignore_eos
        if req.temperature > 0:
            gc.do_sample = True
            gc.temperature = req.temperature
            gc.top_p = req.top_p
            gc.top_k = req.top_k if req.top_k > 0 else 0
            if req.seed is not None:
                gc.rng_seed = int(req.seed)
        else:
            gc.do_sample = False
        return gc

    # ---- engine thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        import numpy as np
        import openvino as ov

        active: list[_Pending] = []
        while not self._stop.is_set():
            for p in self._take_new(wait=not active):
                assert isinstance(p, _Pending)
                try:
                    ids = ov.Tensor(np.array([p.req.prompt_ids], dtype=np.int64))
                    p.handle = self._pipe.add_request(next(self._ids), ids, self._config(p.req))
                    active.append(p)
                except Exception as e:  # bad parameters for this one request: fail it, keep serving
                    p.put(AdapterError("refused", f"openvino-genai refused the request: {e}"))
            if not active:
                continue
            for p in active:
                if p.cancelled and p.handle is not None:
                    p.handle.cancel()
            try:
                self._pipe.step()
            except Exception as e:  # the pipeline failed: every request in flight fails, the thread goes on
                for p in active:
                    p.put(AdapterError("engine", f"openvino-genai step failed: {e}"))
                active.clear()
                continue
            t_ns = time.perf_counter_ns()
            still = []
            for p in active:
                try:
                    if p.handle.can_read():
                        for out in p.handle.read().values():
                            new = list(out.generated_ids)
                            if new:
                                p.produced += len(new)
                                p.put((t_ns, new))
                    status = p.handle.get_status().name
                except Exception as e:
                    p.put(AdapterError("engine", f"openvino-genai: {e}"))
                    continue
                if status == "RUNNING":
                    still.append(p)
                elif status == "FINISHED" and not p.cancelled:
                    p.put(DONE if p.produced == p.req.max_tokens else AdapterError(
                        "engine", f"openvino-genai stopped after {p.produced} of {p.req.max_tokens} tokens"))
                elif not p.cancelled:
                    p.put(AdapterError("engine", f"openvino-genai request ended with status {status}"))
            active = still
            m = self._pipe.get_metrics()
            self._stats = {"kv_cache_usage_pct": float(m.cache_usage), "running": float(m.scheduled_requests),
                           "waiting": float(max(0, m.requests - m.scheduled_requests)),
                           "kv_cache_bytes": float(m.kv_cache_size_in_bytes)}
        for p in active:  # closed while requests were in flight
            p.put(AdapterError("cancelled", "the openvino adapter was closed"))

