"""The `own` and `own-static` adapters: own_engine, continuous or static batching.

The registry runs them in a process of their own (`adapters.engine_process`);
inside it, the engine runs in its own thread (`AsyncLLMEngine`) and chunks
carry the token ids and the engine's stamp taken right after the step that
produced them. Device: CUDA when available, else CPU (`device=` overrides);
`threads` sets torch's CPU thread count. `model=None` is the default model
`tiny`, created in the model cache on first use.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field, field_validator

from adapters.base import (
    REFERENCE_FORMAT,
    Adapter,
    AdapterError,
    Capabilities,
    Chunk,
    EngineInfo,
    InProcessOptions,
    RequestSpec,
    VerifyCase,
)
from build_info import __version__ as advisor_version

DEFAULT_MAX_BATCH = 64


class OwnStaticOptions(InProcessOptions):
    dtype: Literal["auto", "fp32", "float32", "bf16", "bfloat16", "fp16", "float16"] = Field(
        "auto", description="weights and KV cache precision (auto: bf16 on CUDA, fp32 on CPU)")
    max_model_len: int | None = Field(None, ge=16, description="context length (default: the model's)")
    linear_kernels: Literal["auto", "panel", "onednn", "torch"] = Field(
        "auto", description="CPU fp32 kernels: panel (own_engine's native AVX-512 kernels for the linears, "
                            "attention and the decoder layer's other ops, built at first use with the C "
                            "compiler), onednn (packed oneDNN linears, PyTorch ops, SDPA), torch (F.linear, "
                            "PyTorch ops, SDPA); auto: the first that runs here")

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if v.strip().lower().startswith("sim"):
            raise ValueError("a simulated device runs the continuous engine only: use --engine own")
        return v


class OwnOptions(OwnStaticOptions):
    max_num_batched_tokens: int | None = Field(None, ge=1, description="prefill token budget per step")
    kv_cache_gb: float | None = Field(None, gt=0, description="KV cache size in GiB")
    block_size: int = Field(16, ge=1, le=1024, description="KV cache block size in tokens")
    cuda_graphs: bool | None = Field(None, description="CUDA graphs for decode (default: on for CUDA)")
    decode_attention: Literal["sdpa", "triton"] = Field(
        "sdpa", description="CUDA decode attention: sdpa (a padded batch, what the CUDA graphs replay by default) or "
                            "triton (a paged kernel: each row reads only its own blocks; not yet measured on a GPU)")
    overlap: bool | None = Field(None, description="overlap scheduling: the next step is scheduled and launched "
                                                   "while one runs (default: on for a simulated device; off on cpu, "
                                                   "where it gains nothing, and on cuda until a GPU has measured it)")

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        """A `sim:` device is parsed now, before the engine process starts (own_engine.core.sim_device), as the
        engine will read it: exactly `sim` or `sim:...` (`SIM:h200` or `simulator` would reach torch as a device)."""
        if v.lower().startswith("sim"):
            from own_engine.core.sim_device import is_sim, parse_sim

            if not is_sim(v):
                raise ValueError(f"{v!r} is not a device; a simulated one is spelled sim or sim:PROFILE, e.g. sim:h200")
            parse_sim(v)  # a SimDeviceError (a ValueError) shows the spelling
        return v


OwnOptionsT = TypeVar("OwnOptionsT", bound=OwnStaticOptions)


class _OwnEngineAdapter(Adapter[OwnOptionsT]):
    """What own and own-static share: everything but the engine they build (`_make_engine`)."""

    capabilities: ClassVar[Capabilities] = Capabilities(
        served=False, per_chunk_tokens=True, own_process=True, batched_channel=True, builtin=True)
    batching: ClassVar[str]

    def __init__(self, model: str | None = None, options: OwnOptionsT | None = None) -> None:
        super().__init__(model, options)
        self._engine: Any = None
        self._front: Any = None
        self._send: Callable[[Any], None] = lambda msg: None

    @classmethod
    def verify_options(cls, case: VerifyCase) -> dict[str, Any]:
        return {"device": "cpu"}  # the fp32 reference computes on the CPU; own_engine takes no precision option

    def _engine_kwargs(self) -> dict[str, Any]:
        o = self.options
        return {"device": o.device, "dtype": o.dtype, "threads": o.threads, "max_model_len": o.max_model_len,
                "linear_kernels": o.linear_kernels}

    @abstractmethod
    def _make_engine(self) -> Any:
        """The engine this adapter serves with, built on the engine thread that steps it."""

    def _start(self) -> EngineInfo:
        from own_engine.core.async_engine import AsyncLLMEngine

        # built on the engine thread that steps it: a model loaded on another thread decodes far slower on CPU
        self._front = AsyncLLMEngine(factory=self._make_engine)
        engine = self._engine = self._front.engine
        d = engine.describe()
        extra = {k: d[k] for k in ("n_params", "model_config", "dtype_bytes", "linear_kernels")}
        for key in ("decode_attention", "layer_ops"):
            if key in d:
                extra[key] = d[key]
        # why own_engine's native kernels are not used here (no compiler, no AVX-512F...): in the run, not a log
        notes = [f"own_engine's native CPU kernels are not used: {d['linear_kernel_note']}"] \
            if d.get("linear_kernel_note") else []
        if d.get("simulated_device"):  # never mistaken for hardware (and never priced: reports.costs, recommend)
            extra["simulated_device"] = d["simulated_device"]
            notes.append(f"SIMULATED device {d['simulated_device']['device']}: the forward sleeps for the profile's "
                         "step times; the tokens are not the model's and no hardware ran this")
        if "block_size" in d:
            extra.update(block_size=d["block_size"], kv_blocks_total=d["kv_blocks_total"], cuda_graphs=d["cuda_graphs"],
                         overlap=d["overlap"])
        return EngineInfo(adapter=self.name, engine="own_engine", version=advisor_version, device=d["device"],
                          model=d["model_path"], format="hf-safetensors", precision=d["precision"],
                          batching=self.batching, threads=d["threads"],  # type: ignore[arg-type]
                          kv_cache_dtype=d["precision"], max_batch=d["max_num_seqs"], vocab_size=engine.config.vocab_size,
                          max_model_len=d["max_model_len"], pid=d["pid"], extra=extra, notes=tuple(notes))

    def _params(self, req: RequestSpec) -> Any:
        """The engine's SamplingParams for `req`; AdapterError when it can never be served."""
        from own_engine.core.sampling_params import SamplingParams

        if self._front is None:
            raise AdapterError("engine", "the own adapter was not started; call start() first")
        self.refuse_unservable(req, self._engine.max_model_len, f"max_model_len {self._engine.max_model_len}")
        try:
            return SamplingParams(temperature=req.temperature, top_p=req.top_p, top_k=req.top_k, seed=req.seed,
                                  max_tokens=req.max_tokens, min_tokens=req.min_tokens, ignore_eos=req.ignore_eos)
        except ValueError as e:
            raise AdapterError("refused", str(e)) from None

    async def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        params = self._params(req)
        first = True
        try:
            async for t_ns, ids in self._front.generate(list(req.prompt_ids), params, req.request_id):
                yield Chunk(t_ns, len(ids), n_prompt=req.n_in if first else None, token_ids=tuple(ids),
                            t_engine_ns=t_ns, token_source="engine")
                first = False
        except ValueError as e:  # RequestRefused: can never fit this engine
            raise AdapterError("refused", str(e)) from None
        except Exception as e:  # anything else the engine raised fails this request, not the run
            raise AdapterError("engine", f"{type(e).__name__}: {e}") from e

    # ---- the engine process's batched channel (adapters.engine_worker) ----------------------------------
    def open_channel(self, send: Callable[[Any], None]) -> None:
        """From now on `submit`ted requests' tokens leave the engine thread as one `("step", ...)` message per
        step through `send` (see adapters.engine_worker), not through `stream()` and an event loop."""
        self._send = send
        self._front.attach_sink(_FrameSink(send))

    def submit(self, rid: int, req: RequestSpec) -> None:
        """Queue `req` under `rid` (any thread); a request that can never be served fails at once."""
        try:
            params = self._params(req)
        except AdapterError as e:
            self._send(("fail", rid, e.kind, str(e)))
            return
        self._front.submit(rid, list(req.prompt_ids), params)

    def cancel(self, rid: int) -> None:
        if self._front is not None:
            self._front.cancel(rid)

    def stats(self) -> dict[str, float]:
        if self._front is None:
            return {}
        return {k: float(v) for k, v in self._front.stats().items()}

    def _close(self) -> None:
        if self._front is not None:
            self._front.close()
            self._front = None
        self._engine = None


class _FrameSink:
    """own_engine's step outputs as the engine process's messages, sent from the engine thread."""

    def __init__(self, send: Callable[[Any], None]) -> None:
        self.send = send

    def step(self, t_ns: int, items: list[tuple[int, list[int], bool]], stats: dict[str, float] | None) -> None:
        self.send(("step", t_ns, items, stats))

    def fail(self, key: int, error: BaseException) -> None:
        kind = "refused" if isinstance(error, ValueError) else "engine"
        self.send(("fail", key, kind, str(error) if kind == "refused" else f"{type(error).__name__}: {error}"))


class OwnAdapter(_OwnEngineAdapter[OwnOptions]):
    """own_engine with continuous batching and a paged KV cache."""

    name: ClassVar[str] = "own"
    Options: ClassVar[type[OwnOptions]] = OwnOptions
    # its fp32 on the folder as it is is the reference every other variant is compared with (advisor verify)
    capabilities: ClassVar[Capabilities] = replace(_OwnEngineAdapter.capabilities,
                                                   verify=(VerifyCase(REFERENCE_FORMAT, "fp32", strict=True),))
    batching: ClassVar[str] = "continuous"

    def _make_engine(self) -> Any:
        from own_engine.core.engine_config import EngineConfig
        from own_engine.core.llm_engine import LLMEngine

        o = self.options
        config = EngineConfig(self.model, max_num_seqs=o.max_batch or DEFAULT_MAX_BATCH,
                              max_num_batched_tokens=o.max_num_batched_tokens, kv_cache_gb=o.kv_cache_gb,
                              block_size=o.block_size, cuda_graphs=o.cuda_graphs, overlap=o.overlap,
                              decode_attention=o.decode_attention, **self._engine_kwargs())
        return LLMEngine(config)


class OwnStaticAdapter(_OwnEngineAdapter[OwnStaticOptions]):
    """own_engine in static-batching mode (plain `generate()` style): the baseline."""

    name: ClassVar[str] = "own-static"
    Options: ClassVar[type[OwnStaticOptions]] = OwnStaticOptions
    batching: ClassVar[str] = "static"

    def _make_engine(self) -> Any:
        from own_engine.core.static_engine import StaticBatchEngine

        return StaticBatchEngine(self.model, max_batch_size=self.options.max_batch or DEFAULT_MAX_BATCH,
                                 **self._engine_kwargs())
