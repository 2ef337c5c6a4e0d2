"""The `own` and `own-static` adapters: own_engine in-process, continuous or static batching.

The engine runs in its own thread (`AsyncLLMEngine`); chunk timestamps are
taken on the engine side right after the step that produced the tokens.
Device: CUDA when available, else CPU (`device=` overrides); `threads` sets
torch's CPU thread count. `model=None` is the default model `tiny`, created
in the model cache on first use. With `keep_token_ids = True` the adapter
also keeps each request's output ids (`token_ids_of(request_id)`), which
`advisor generate` uses; benchmarks leave it off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from adapters.base import AdapterError, Chunk, EngineInfo, RequestSpec
from advisor import __version__ as advisor_version

WARMUP_PROMPTS = [[5, 6, 7, 8, 9, 10, 11, 12], [13, 14, 15]]


class OwnAdapter:
    name: ClassVar[str] = "own"
    batching: ClassVar[str] = "continuous"

    def __init__(self, model: str | None = None, *, device: str = "auto", threads: int | None = None,
                 dtype: str = "auto", max_num_seqs: int = 64, **engine_kwargs: Any) -> None:
        self.model = model
        self.device = device
        self.threads = None if threads is None else int(threads)
        self.dtype = dtype
        self.max_num_seqs = int(max_num_seqs)
        self.engine_kwargs = engine_kwargs
        self._engine: Any = None
        self._front: Any = None
        self.keep_token_ids = False
        self._token_ids: dict[str, list[int]] = {}

    def _make_engine(self) -> Any:
        from own_engine.llm_engine import LLMEngine

        return LLMEngine(self.model, device=self.device, dtype=self.dtype, threads=self.threads,
                         max_num_seqs=self.max_num_seqs, **self.engine_kwargs)

    def start(self) -> EngineInfo:
        from own_engine.async_engine import AsyncLLMEngine
        from own_engine.sampling_params import SamplingParams

        engine = self._make_engine()
        vocab = engine.config.vocab_size
        warm = [[t % vocab for t in p] for p in WARMUP_PROMPTS]
        engine.generate(warm, SamplingParams(max_tokens=4, ignore_eos=True))  # prefill + batched decode paths
        self._engine = engine
        self._front = AsyncLLMEngine(engine)
        d = engine.describe()
        extra = {k: d[k] for k in ("n_params", "model_config", "dtype_bytes")}
        if "block_size" in d:
            extra.update(block_size=d["block_size"], kv_blocks_total=d["kv_blocks_total"], cuda_graphs=d["cuda_graphs"])
        return EngineInfo(adapter=self.name, engine="own_engine", version=advisor_version, device=d["device"],
                          model=d["model_path"], format="hf-safetensors", precision=d["precision"],
                          batching=self.batching, threads=d["threads"],  # type: ignore[arg-type]
                          kv_cache_dtype=d["precision"], max_batch=d["max_num_seqs"], vocab_size=vocab,
                          max_model_len=d["max_model_len"], pid=d["pid"], extra=extra)

    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        from own_engine.sampling_params import SamplingParams

        if self._front is None:
            raise AdapterError("engine", "the own adapter was not started; call start() first")
        try:
            params = SamplingParams(temperature=req.temperature, top_p=req.top_p, top_k=req.top_k, seed=req.seed,
                                    max_tokens=req.max_tokens, min_tokens=req.min_tokens, ignore_eos=req.ignore_eos)
        except ValueError as e:
            raise AdapterError("refused", str(e)) from None
        first = True
        kept = self._token_ids.setdefault(req.request_id, []) if self.keep_token_ids else None
        try:
            async for t_ns, ids in self._front.generate(list(req.prompt_ids), params, req.request_id):
                if kept is not None:
                    kept.extend(ids)
                yield Chunk(t_ns, len(ids), n_prompt=req.n_in if first else None)
                first = False
        except ValueError as e:  # RequestRefused: can never fit this engine
            raise AdapterError("refused", str(e)) from None
        except Exception as e:  # anything else the engine raised fails this request, not the run
            raise AdapterError("engine", f"{type(e).__name__}: {e}") from e

    def token_ids_of(self, request_id: str) -> list[int] | None:
        """Output ids of a finished request, when `keep_token_ids` was on."""
        return self._token_ids.get(request_id)

    def stats(self) -> dict[str, float]:
        if self._front is None:
            return {}
        return {k: float(v) for k, v in self._front.stats().items()}

    def close(self) -> None:
        if self._front is not None:
            self._front.close()
            self._front = None
        self._engine = None


class OwnStaticAdapter(OwnAdapter):
    """own_engine in static-batching mode (plain `generate()` style): the baseline."""

    name: ClassVar[str] = "own-static"
    batching: ClassVar[str] = "static"

    def _make_engine(self) -> Any:
        from own_engine.static_engine import StaticBatchEngine

        return StaticBatchEngine(self.model, device=self.device, dtype=self.dtype, threads=self.threads,
                                 max_batch_size=self.max_num_seqs, **self.engine_kwargs)
