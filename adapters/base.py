"""The adapter contract: what every engine wrapper is given and what it reports.

An adapter turns one `RequestSpec` into a stream of `Chunk`s stamped with
`time.perf_counter_ns()` as they reach the client side. It reports raw facts
only (timestamps, token counts from the engine or the server's usage); every
metric is computed later, once, in `advisor.metrics`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

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

    `n_tokens` is how many output tokens this chunk carried, as counted by the
    engine (or derived from the server's cumulative usage). The optional
    cumulative fields let HTTP adapters report the server's own counts and the
    client's count side by side (METRICS.md: never re-tokenise chunk by chunk
    to get the primary count).
    """

    t_ns: int  # time.perf_counter_ns() at arrival
    n_tokens: int
    text: str | None = None
    n_prompt: int | None = None  # prompt tokens as the engine/server counted them
    n_out_total: int | None = None  # server's cumulative completion tokens so far
    n_out_client: int | None = None  # client's own cumulative count so far


class AdapterError(Exception):
    """A request failed; the load generator records it with its kind and goes on."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind


class EngineUnavailable(RuntimeError):
    """The adapter cannot be created here; the message says why and how to fix it."""


@dataclass(frozen=True)
class EngineInfo:
    """What was measured: stored in every result."""

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
    extra: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@runtime_checkable
class Adapter(Protocol):
    """Every engine wrapper. Created by the registry; heavy imports happen in `__init__`/`start`."""

    name: ClassVar[str]

    def start(self) -> EngineInfo:
        """Load the model and warm up; returns what is being measured."""
        ...

    def stream(self, req: RequestSpec) -> AsyncIterator[Chunk]:
        """Serve one request; raise AdapterError for a failed request."""
        ...

    def stats(self) -> dict[str, float]:
        """Engine-side gauges if any (kv_blocks_used, kv_blocks_total, running, waiting, preemptions)."""
        ...

    def close(self) -> None:
        """Release the engine. An adapter may also define `async aclose()`, awaited first."""
        ...
