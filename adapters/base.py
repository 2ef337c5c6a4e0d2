"""The adapter contract: what every engine wrapper is given, what it reports, and how it starts and stops.

An adapter turns one `RequestSpec` into a stream of `Chunk`s stamped with
`time.perf_counter_ns()` as they reach the client side. It reports raw facts
only (timestamps, token counts from the engine or the server's usage); every
metric is computed later, once, in `advisor.metrics`.

`Adapter` is a base class, not a protocol to probe: `start()` is idempotent,
keeps `info` and times the cold start; every adapter declares its typed
`Options` (the type parameter of `Adapter[OptionsT]`, checked once when it is
built) and its `capabilities` (what callers need to know: where its model comes
from, whether it offers a batched channel, which formats `advisor verify`
checks it in); one warm-up (which is also the preflight request that proves
the engine can serve) and one refusal check serve all. Nothing outside an
adapter calls getattr/hasattr on it or compares its name.
"""

from __future__ import annotations

import asyncio
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

from fileform import FileForm

ErrorKind = Literal[
    "http_4xx",  # the server refused the request (400-499 except 429)
    "http_429",  # rate limited
    "http_5xx",  # the server failed
    "connection",  # refused, reset or dropped connection
    "timeout",  # the per-request deadline passed
    "stream",  # malformed or truncated stream
    "engine",  # the in-process engine raised
    "refused",  # the engine says the request can never fit (too long, bad params)
    "cancelled",  # the run was stopped before the request finished
]

# Where a request's per-chunk token counts came from (docs/metrics.md, "Token counts").
TokenSource = Literal["engine", "server_per_chunk", "tokenizer_aligned", "tokenizer_over_usage", "text_proportional",
                      "client_chunks"]


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One request, with the same meaning for every engine.

    `prompt_ids` are token ids of the model's own tokenizer; `prompt_text` is
    their decoded text for engines or servers that only take text. Benchmarks
    ask for exactly `max_tokens` output tokens (`ignore_eos`, `min_tokens`).
    """

    request_id: str
    prompt_ids: tuple[int, ...]
    max_tokens: int
    min_tokens: int = 0
    ignore_eos: bool = True
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    prompt_text: str | None = None
    user: str | None = None  # a stable end-user id (multi-turn sessions): servers may route or cache by it

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not 0 <= self.min_tokens <= self.max_tokens:
            raise ValueError(f"min_tokens must be in [0, max_tokens={self.max_tokens}], got {self.min_tokens}")

    @property
    def n_in(self) -> int:
        return len(self.prompt_ids)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One streamed piece of output as it reached the client.

    `n_tokens` is how many output tokens this chunk carried (docs/metrics.md
    says where the count comes from: `token_source`). The cumulative fields
    let HTTP adapters report the server's own counts and the client's count
    side by side. `t_engine_ns` is the engine's own stamp (same clock), kept
    beside the client-side arrival `t_ns` for engines that report one.
    """

    t_ns: int  # time.perf_counter_ns() at arrival on the client side
    n_tokens: int
    text: str | None = None
    n_prompt: int | None = None  # prompt tokens as the engine/server counted them
    n_out_total: int | None = None  # server's cumulative completion tokens so far
    n_out_client: int | None = None  # client's own cumulative count so far
    token_ids: tuple[int, ...] | None = None  # the ids, where the engine reports them
    t_engine_ns: int | None = None  # when the engine produced them (perf_counter_ns, same clock as t_ns)
    token_source: TokenSource | None = None


class AdapterError(Exception):
    """A request failed; the load generator records it with its kind and goes on."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind

    def __reduce__(self) -> tuple[Any, ...]:  # crosses the engine-process boundary intact
        return (AdapterError, (self.kind, str(self)))


class EngineUnavailable(RuntimeError):
    """The adapter cannot be created or started here; the message says why and how to fix it."""


@dataclass(frozen=True)
class EngineInfo(FileForm):
    """What was measured: result.json's `engine` object (its file form follows from the fields, fileform;
    fields added later (ready_s, placement) default, keys no longer known are dropped)."""

    adapter: str  # registry name, e.g. "own", "own-static", "openai"
    engine: str  # human name of the engine, e.g. "own_engine", "vLLM"
    version: str  # the engine package's version
    device: str  # "cpu", "cuda:0 (NVIDIA H100 80GB HBM3)", "http://127.0.0.1:8000"
    model: str  # model name or path
    format: str  # "hf-safetensors", "gguf", "onnx", "openvino-ir", "server"
    precision: str  # "fp32", "bf16", "q4_0", ...
    batching: Literal["continuous", "static", "none", "unknown"] = "unknown"
    threads: int | None = None
    kv_cache_dtype: str | None = None
    max_batch: int | None = None
    vocab_size: int | None = None
    max_model_len: int | None = None
    pid: int | None = None  # process whose memory and CPU telemetry should sample
    ready_s: float | None = None  # cold start: from start() until the warm-up request was served, less convert_s
    convert_s: float | None = None  # a one-off model conversion start() did first (not part of ready_s); None: none
    placement: dict[str, Any] = field(default_factory=dict)  # engine process and CPUs, client CPUs
    extra: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


# Where an adapter's model comes from: "folder": a model folder or a model-cache name on this machine
# (model_cache.resolve; none given is the default model); "hub": a folder or a hub id the engine fetches itself;
# "served": the name a server serves it under; "none": no model at all (a test engine).
ModelSource = Literal["folder", "hub", "served", "none"]
REFERENCE_FORMAT = "hf-safetensors"  # the model folder as it is: what the fp32 reference (adapters.formats.oracle) reads


@dataclass(frozen=True)
class VerifyCase:
    """One format and precision `advisor verify` checks an adapter in, against the fp32 reference."""

    format: str  # adapters.formats format name; REFERENCE_FORMAT: the folder as it is, no conversion
    precision: str
    strict: bool = False  # must agree token for token: fp32, and fp16 where the engine computes in fp32


@dataclass(frozen=True)
class Capabilities:
    """What an adapter is, declared once per class; callers ask this, never the adapter's name."""

    served: bool  # reached over the network (openai); else the engine is loaded by advisor itself
    per_chunk_tokens: bool  # every chunk carries the engine's own exact token count
    own_process: bool = False  # loaded by advisor and run in a child process of its own (adapters.engine_process)
    model_source: ModelSource | None = None  # None: "served" for a served adapter, else "folder"
    # offers `open_channel(send)`, `submit(rid, spec)`, `cancel(rid)`: its engine process sends one message per
    # engine step instead of running an event loop (adapters.engine_worker)
    batched_channel: bool = False
    builtin: bool = False  # advisor's own engine (own_engine): the reference, not a production server
    verify: tuple[VerifyCase, ...] = ()  # what `advisor verify` checks it in, in this order

    def __post_init__(self) -> None:
        if self.model_source is None:
            object.__setattr__(self, "model_source", "served" if self.served else "folder")
        assert self.served == (self.model_source == "served"), self


@dataclass(frozen=True)
class WorkerClient:
    """What a load-generator worker in another process needs to send requests to an engine started here.

    Picklable. The engine was started and warmed up once, by the driver: a worker's adapter
    (`Adapter.attached`) never launches a server and sends no warm-up request.
    """

    name: str  # registry name
    model: str | None
    options: EngineOptions
    info: EngineInfo
    state: dict[str, Any] = field(default_factory=dict)  # what the driver's adapter learned (adapter-specific)


class EngineOptions(BaseModel):
    """Options every adapter takes; each adapter extends this with its own (one spelling each).

    Unknown keys are errors that list the valid options (`advisor engines --json` shows them).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    device: str = Field("auto", description="where the engine runs: auto, cpu, cuda[:N]")
    threads: int | None = Field(None, ge=1, le=1024, description="engine CPU threads (default: the engine's cores)")
    max_batch: int | None = Field(None, ge=1, le=65536, description="most requests the engine serves at once")


class InProcessOptions(EngineOptions):
    """Options of engines advisor loads itself."""

    isolate: bool = Field(True, description="run the engine in its own process (false: on the client's "
                                            "interpreter, only to compare; send lag suffers)")


OptionsT = TypeVar("OptionsT", bound=EngineOptions)

WARMUP_PROMPTS: tuple[tuple[int, ...], ...] = ((5, 6, 7, 8, 9, 10, 11, 12), (13, 14, 15))
WARMUP_TOKENS = 4
WARMUP_TIMEOUT_S = 600.0


class Adapter(ABC, Generic[OptionsT]):
    """Every engine wrapper. Created by the registry (`adapters.create`); heavy imports happen in `_start`.

    Generic in its options type: `class XAdapter(Adapter[XOptions])` with `Options = XOptions`, so
    `self.options` is an `XOptions` without a check in every adapter.
    """

    name: ClassVar[str]
    Options: ClassVar[type[EngineOptions]] = EngineOptions
    capabilities: ClassVar[Capabilities]
    # warm-up requests together (the batched paths); one after another for servers that may not queue
    warm_up_together: ClassVar[bool] = True

    def __init__(self, model: str | None, options: OptionsT | None = None) -> None:
        self.model = model
        opts = options if options is not None else self.Options()
        if not isinstance(opts, self.Options):  # the one check of the options' type, for every way in
            raise TypeError(f"the {self.name} adapter takes {self.Options.__name__}, not {type(opts).__name__}: "
                            f"build them with adapters.parse_options('{self.name}', {{...}})")
        self.options: OptionsT = cast(OptionsT, opts)
        self._info: EngineInfo | None = None
        self._notes: list[str] = []  # learned while serving (a server that refused a field, ...)

    # ---- lifecycle (shared) --------------------------------------------------------------------
    def start(self, timeout_s: float = WARMUP_TIMEOUT_S) -> EngineInfo:
        """Load the model, warm up with a real request; idempotent: a started adapter returns its info.

        `timeout_s` bounds each warm-up request (the benchmark's per-request timeout, usually).
        """
        if self._info is not None:
            return self._info
        t0 = time.perf_counter()
        info = self._start()
        try:
            self._warm_up(info, timeout_s)
        except BaseException:
            self.close()
            raise
        # a conversion done once per model is not cold start: a new replica finds it cached
        # which clock stamps arrivals: an HTTP adapter says (adapters.kernel_stamps); in-process engines' chunks are
        # stamped with perf_counter_ns when handed to the load generator
        self._info = replace(info, ready_s=round(time.perf_counter() - t0 - (info.convert_s or 0.0), 4),
                             extra={"arrival_clock": "in_process", **info.extra})
        return self._info

    @property
    def started(self) -> bool:
        return self._info is not None

    @property
    def info(self) -> EngineInfo:
        if self._info is None:
            raise RuntimeError(f"the {self.name} adapter is not started: call start() first")
        return self._info

    @property
    def notes(self) -> tuple[str, ...]:
        """Facts learned while serving, for the result (EngineInfo holds those known at start)."""
        return tuple(self._notes)

    def close(self) -> None:
        """Release the engine; safe to call twice. After close(), start() starts it again."""
        self._close()
        self._info = None

    async def aclose(self) -> None:  # noqa: B027 (optional hook)
        """Release resources bound to the current event loop (HTTP sessions, readers); the engine stays up."""

    def stats(self) -> dict[str, float]:
        """Engine-side gauges if any (kv_blocks_used, kv_blocks_total, running, waiting, preemptions)."""
        return {}

    @classmethod
    def verify_options(cls, case: VerifyCase) -> dict[str, Any]:
        """The options `advisor verify` builds this adapter with for `case` (adapters add what agreement needs)."""
        return {"precision": case.precision}

    # ---- load-generator workers (advisor.loadgen.workers) --------------------------------------
    def worker_client(self) -> WorkerClient | None:
        """How a worker process sends requests to this started engine; None: only this process can (in-process)."""
        return None

    @classmethod
    def attached(cls, client: WorkerClient) -> Adapter:
        """A started adapter, in a worker process, for the engine `client` describes: no launch, no warm-up."""
        adapter = cls(client.model, client.options)
        adapter._attach(client.state)
        adapter._info = client.info
        return adapter

    def _attach(self, state: dict[str, Any]) -> None:
        """Take over what the driver's adapter learned (`WorkerClient.state`); only adapters with workers."""
        raise NotImplementedError(f"the {self.name} adapter has no load-generator workers")

    # ---- what each adapter implements ------------------------------------------------------------
    @abstractmethod
    def _start(self) -> EngineInfo:
        """Load the model and make the engine ready to serve; return what is being measured."""

    @abstractmethod
    def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        """Serve one request; raise AdapterError for a failed request."""

    def _close(self) -> None:  # noqa: B027 (optional hook)
        """Release what `_start` acquired; must tolerate being called when not started."""

    # ---- shared helpers --------------------------------------------------------------------------
    @staticmethod
    def refuse_unservable(req: RequestSpec, max_len: int | None, limit: str) -> None:
        """The one refusal check: an empty prompt, or prompt + max_tokens past `max_len` (`limit` names it)."""
        if req.n_in == 0:
            raise AdapterError("refused", "empty prompt: give at least one token id")
        if max_len is not None and req.n_in + req.max_tokens > max_len:
            raise AdapterError("refused", f"prompt {req.n_in} + max_tokens {req.max_tokens} = "
                               f"{req.n_in + req.max_tokens} tokens exceeds {limit}")

    def warmup_requests(self, info: EngineInfo) -> list[RequestSpec]:
        """Two small requests (prefill and batched decode paths); ids kept inside the vocabulary."""
        vocab = info.vocab_size or 32000
        return [RequestSpec(f"warmup-{i}", tuple(t % vocab for t in ids), max_tokens=WARMUP_TOKENS)
                for i, ids in enumerate(WARMUP_PROMPTS)]

    def _warm_up(self, info: EngineInfo, timeout_s: float = 600.0) -> None:
        """Serve the warm-up requests before any timing; they are also the preflight.

        An engine that cannot serve them (no tokenizer for a text-only server, model not loaded)
        fails here, before anything is measured, with the engine's own words and the fix.
        Run on a private event loop in a helper thread, so start() also works from async code.
        """
        reqs = self.warmup_requests(info)

        async def one(req: RequestSpec) -> None:
            n = 0
            try:
                async with asyncio.timeout(timeout_s):
                    async for ch in self.stream(req):
                        n += ch.n_tokens
            except TimeoutError:
                raise AdapterError("timeout", f"no complete answer within {timeout_s:g} s") from None
            if n < 1:
                raise AdapterError("stream", "the warm-up request returned no output token")

        async def all_of_them() -> None:
            try:
                if self.warm_up_together:
                    await asyncio.gather(*(one(r) for r in reqs))
                else:
                    for r in reqs:
                        await one(r)
            finally:
                await self.aclose()

        errors: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(all_of_them())
            except BaseException as e:  # re-raised in the caller's thread below
                errors.append(e)

        t = threading.Thread(target=run, name=f"{self.name}-warm-up")
        t.start()
        t.join()
        if errors:
            e = errors[0]
            detail = f"{e.kind}: {e}" if isinstance(e, AdapterError) else f"{type(e).__name__}: {e}"
            raise EngineUnavailable(f"engine '{self.name}' started but could not serve a warm-up request "
                                    f"({detail}); {self.preflight_hint(e)}") from e

    def preflight_hint(self, error: BaseException) -> str:
        """What to do when the warm-up request failed (adapters refine this)."""
        return "check the model and the engine's log"

    def answer_ids(self, text: str) -> tuple[int, ...] | None:
        """An answer's streamed text as the model's token ids, where the adapter holds the tokenizer; else None.

        Multi-turn sessions resend each answer in the next prompt: engines that report `Chunk.token_ids`
        need none of this; a server that streams text only is re-encoded here (advisor.loadgen.sessions).
        """
        return None
