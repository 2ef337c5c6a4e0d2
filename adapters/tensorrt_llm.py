"""The `tensorrt_llm` adapter: TensorRT-LLM's LLM API in-process, streaming (NVIDIA GPUs only).

Written against TensorRT-LLM's documented LLM API (1.x: `tensorrt_llm.LLM`,
the PyTorch backend by default; `SamplingParams(max_tokens, min_tokens,
ignore_eos, ...)`; `LLM.generate_async(token_ids, sampling_params,
streaming=True)` is async-iterable and each `RequestOutput.outputs[0]` has
cumulative `token_ids` plus `token_ids_diff`/`text_diff` for the newest step)
and never run here: it cannot be installed without NVIDIA's package index
and a CUDA GPU. Its tests skip cleanly where `tensorrt_llm` is absent.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar, Literal

from pydantic import Field

from adapters.base import (
    Adapter,
    AdapterError,
    Capabilities,
    Chunk,
    EngineInfo,
    EngineUnavailable,
    InProcessOptions,
    RequestSpec,
)


def sampling_kwargs(req: RequestSpec) -> dict[str, Any]:
    """RequestSpec -> TensorRT-LLM SamplingParams keywords (greedy is top_k=1; exact length via min_tokens)."""
    kw: dict[str, Any] = {"max_tokens": req.max_tokens, "ignore_eos": req.ignore_eos, "detokenize": True}
    min_tokens = req.max_tokens if req.ignore_eos else req.min_tokens
    if min_tokens:
        kw["min_tokens"] = min_tokens
    if req.temperature == 0.0:
        kw["top_k"] = 1  # TensorRT-LLM's greedy path; a temperature of 0 is not a valid sampling temperature there
    else:
        kw.update(temperature=req.temperature, top_p=req.top_p)
        if req.top_k > 0:
            kw["top_k"] = req.top_k
    if req.seed is not None:
        kw["seed"] = req.seed
    return kw


class TensorRTLLMOptions(InProcessOptions):
    backend: Literal["pytorch", "tensorrt", "_autodeploy"] = Field("pytorch", description="LLM API backend")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs per model")
    dtype: str = Field("auto", description="model dtype")
    llm_kwargs: dict[str, Any] = Field(default_factory=dict, description="more LLM(...) arguments, by name")


class TensorRTLLMAdapter(Adapter[TensorRTLLMOptions]):
    name: ClassVar[str] = "tensorrt_llm"
    Options: ClassVar[type[TensorRTLLMOptions]] = TensorRTLLMOptions
    capabilities: ClassVar[Capabilities] = Capabilities(served=False, per_chunk_tokens=True, own_process=True,
                                                        model_source="hub")

    def __init__(self, model: str | None, options: TensorRTLLMOptions | None = None) -> None:
        super().__init__(model, options)
        o = self.options
        if not model:
            raise ValueError("the tensorrt_llm adapter needs a model (a local HF folder, or an engine folder)")
        try:
            import tensorrt_llm  # noqa: F401  (imported only when the adapter is created)
        except ImportError as e:
            raise EngineUnavailable(f"TensorRT-LLM is not importable ({e}): it installs from NVIDIA's index on a "
                                    "CUDA machine: pip install tensorrt-llm --extra-index-url "
                                    "https://pypi.nvidia.com") from e
        self.backend = o.backend
        self.tensor_parallel_size = o.tensor_parallel_size
        self.dtype = o.dtype
        self.llm_kwargs = dict(o.llm_kwargs)
        if o.max_batch is not None:
            self.llm_kwargs.setdefault("max_batch_size", o.max_batch)
        self._llm: Any = None
        self._sp: Any = None
        self._running = 0

    def _start(self) -> EngineInfo:
        import tensorrt_llm
        from tensorrt_llm import SamplingParams

        if self.backend == "tensorrt":  # the engine-building backend lives apart from the default LLM since 1.0
            from tensorrt_llm._tensorrt_engine import LLM
            kwargs = dict(self.llm_kwargs)
        else:
            from tensorrt_llm import LLM
            kwargs = dict(self.llm_kwargs)
            if self.backend != "pytorch":
                kwargs["backend"] = self.backend
        try:
            self._llm = LLM(model=self.model, tensor_parallel_size=self.tensor_parallel_size, dtype=self.dtype,
                            **kwargs)
        except Exception as e:  # model load and engine build raise many types; all mean "cannot start here"
            raise EngineUnavailable(f"TensorRT-LLM could not start {self.model!r}: {type(e).__name__}: {e}") from e
        self._sp = SamplingParams
        device = "cuda:0"
        try:
            import torch

            device = f"cuda:0 ({torch.cuda.get_device_name(0)})"
        except (ImportError, RuntimeError, AssertionError):
            pass  # the name is cosmetic; the device is a CUDA GPU either way
        args = getattr(self._llm, "args", None)
        return EngineInfo(adapter="tensorrt_llm", engine="TensorRT-LLM", version=str(tensorrt_llm.__version__),
                          device=device, model=self.model, format="hf-safetensors" if self.backend != "tensorrt"
                          else "tensorrt-engine", precision=self.dtype, batching="continuous",
                          max_batch=getattr(args, "max_batch_size", None), max_model_len=getattr(args, "max_seq_len", None),
                          pid=os.getpid(), extra={"backend": self.backend, "tensor_parallel_size": self.tensor_parallel_size},
                          notes=("written to TensorRT-LLM's documented LLM API; not exercised in this project's CI",))

    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        if self._llm is None:
            raise AdapterError("engine", "the tensorrt_llm adapter was not started; call start() first")
        try:
            params = self._sp(**sampling_kwargs(req))
        except (ValueError, TypeError) as e:
            raise AdapterError("refused", f"TensorRT-LLM refused the sampling parameters: {e}") from e
        self._running += 1
        total = 0
        try:
            result = self._llm.generate_async(list(req.prompt_ids), sampling_params=params, streaming=True)
            async for out in result:
                t_ns = time.perf_counter_ns()
                comp = out.outputs[0]
                n = len(comp.token_ids) - total  # cumulative ids: the difference is this step's tokens
                total = len(comp.token_ids)
                if n > 0 or out.finished:
                    yield Chunk(t_ns, max(n, 0), comp.text_diff or None,
                                n_prompt=len(out.prompt_token_ids) if out.finished else None, n_out_total=total,
                                token_ids=tuple(comp.token_ids[total - max(n, 0):]), token_source="engine")
        except (ValueError, TypeError) as e:  # prompt too long for the engine, bad ids
            raise AdapterError("refused", f"TensorRT-LLM refused request {req.request_id}: {e}") from e
        except RuntimeError as e:  # tensorrt_llm's RequestError and executor failures derive from it
            raise AdapterError("engine", f"TensorRT-LLM failed request {req.request_id}: {e}") from e
        finally:
            self._running -= 1

    def stats(self) -> dict[str, float]:
        # iteration stats (KV blocks, queue) need enable_iter_perf_stats and an async poll: not wired yet
        return {"running": float(self._running)}

    def _close(self) -> None:
        if self._llm is not None:
            self._llm.shutdown()
            self._llm = None
