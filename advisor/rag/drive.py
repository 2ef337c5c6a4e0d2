"""Drive a rag schedule through the pipeline's stages, open loop, and keep one raw record per request.

Each question goes out at its scheduled offset (a late one at once: the lag is recorded) as its own task,
so a slow answer never holds back the next send. A request is: embed the question (the embed engine),
search the index (`advisor.rag.index`, in this process), rerank the top-k (the rerank engine, when there
is one), then stream the answer (the generation engine) with the best passages in the prompt. Every
stage boundary is stamped with `perf_counter_ns` on the client side, so the stages' times add up to the
end-to-end time exactly (waiting for a busy engine counts in that engine's stage); `advisor.rag.metrics`
computes everything from the stamps.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from adapters.base import Adapter, AdapterError, RequestSpec
from adapters.embed_base import EmbedAdapter, EmbedRequest
from advisor.embed.drive import START_LEAD_NS, send_on_schedule
from advisor.rag.index import VectorIndex
from scenarios.rag_schedule import RagSchedule

STAGES = ("embed", "search", "rerank", "generate")


@dataclass(frozen=True, slots=True)
class RagRecord:
    """One question as it happened; times are perf_counter_ns from the run's start (t0), None where not reached."""

    index: int
    warmup: bool
    t_sched_ns: int
    t_send_ns: int  # the user's send
    t_embed_ns: int | None = None  # the question's vector is back
    t_search_ns: int | None = None  # the index returned the top-k
    t_rerank_ns: int | None = None  # the rerank scores are back (== t_search_ns without a rerank stage)
    t_first_ns: int | None = None  # the first answer token arrived
    t_done_ns: int | None = None  # the last answer token arrived (a failed request: when it failed)
    n_prompt: int | None = None  # prompt tokens sent to the generation engine
    n_answer: int = 0  # answer tokens received
    passages: tuple[int, ...] = ()  # passage numbers in the prompt, in prompt order
    failed_stage: str | None = None
    error_kind: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.t_done_ns is not None and self.t_first_ns is not None

    def stage_ms(self) -> dict[str, float] | None:
        """Each stage's time, ms (generate: handoff to the last answer token); None for a failed request."""
        if not self.ok:
            return None
        t = (self.t_send_ns, self.t_embed_ns, self.t_search_ns, self.t_rerank_ns, self.t_done_ns)
        return {s: (b - a) / 1e6 for s, a, b in zip(STAGES, t, t[1:])}  # type: ignore[operator]

    @property
    def ttfa_ms(self) -> float | None:
        """Time to the first answer token from the user's send."""
        return (self.t_first_ns - self.t_send_ns) / 1e6 if self.ok else None  # type: ignore[operator]

    @property
    def e2e_ms(self) -> float | None:
        return (self.t_done_ns - self.t_send_ns) / 1e6 if self.ok else None  # type: ignore[operator]

    @property
    def gen_ttft_ms(self) -> float | None:
        """The generation engine's own time to first token: from the handoff (prompt built) to the first token."""
        return (self.t_first_ns - self.t_rerank_ns) / 1e6 if self.ok else None  # type: ignore[operator]

    @property
    def gen_tpot_ms(self) -> float | None:
        if not self.ok or self.n_answer < 2:
            return None
        return (self.t_done_ns - self.t_first_ns) / 1e6 / (self.n_answer - 1)  # type: ignore[operator]

    @property
    def send_lag_ms(self) -> float:
        return (self.t_send_ns - self.t_sched_ns) / 1e6


def prompt_text(question: str, context: list[str]) -> str:
    """The answer prompt: the retrieved passages, then the question."""
    body = "\n\n".join(f"Passage {i + 1}: {p}" for i, p in enumerate(context))
    return f"Answer the question from the passages.\n\n{body}\n\nQuestion: {question}\nAnswer:"


def word_ids(text: str, vocab_size: int) -> tuple[int, ...]:
    """Token ids for an engine with no tokenizer here (the fake engine): one id per word, crc32 of the word
    modulo the vocabulary, so the prompt's length in tokens is its length in words."""
    return tuple(zlib.crc32(w.encode()) % vocab_size for w in text.split())


@dataclass
class Pipeline:
    """The started stages of one pipeline; `encode` turns prompt text into the generation engine's ids."""

    embedder: EmbedAdapter
    reranker: EmbedAdapter | None
    generator: Adapter
    index: VectorIndex
    passages: tuple[str, ...]
    encode: Callable[[str], tuple[int, ...]]
    top_k: int
    context_passages: int
    answer_tokens: int

    async def answer(self, rid: str, question: str, stamp: Callable[..., None]) -> tuple[int, int, tuple[int, ...]]:
        """Run one question through every stage; `stamp(stage)` is called as each ends, `stamp("first", t_ns)` and
        `stamp("last", t_ns)` with the first and the last answer token's arrival stamp. Returns (prompt tokens, answer tokens, passages in the prompt); AdapterError on
        a failed stage (its `stage` attribute names it)."""
        stage = "embed"
        try:
            res = await self.embedder.embed(EmbedRequest(f"{rid}-q", (question,), return_vectors=True))
            if not res.vectors:
                raise AdapterError("stream", "the embed engine returned no vector for the question")
            stamp("embed")
            stage = "search"
            found, _ = self.index.search(res.vectors[0], self.top_k)
            stamp("search")
            stage = "rerank"
            if self.reranker is not None:
                rr = await self.reranker.embed(EmbedRequest(f"{rid}-r", tuple(self.passages[i] for i in found),
                                                            return_vectors=True, query=question))
                if rr.scores is None or len(rr.scores) != len(found):
                    raise AdapterError("stream", f"the rerank engine returned {len(rr.scores or ())} scores for "
                                                 f"{len(found)} passages")
                order = sorted(range(len(found)), key=lambda j: (-rr.scores[j], j))  # type: ignore[index]
                found = tuple(found[j] for j in order)
            stamp("rerank")
            kept = found[:self.context_passages]
            text = prompt_text(question, [self.passages[i] for i in kept])
            ids = self.encode(text)  # the prompt's tokens: part of the generate stage, as a server tokenizes
            stage = "generate"
            n_answer = 0
            spec = RequestSpec(rid, ids, self.answer_tokens, min_tokens=self.answer_tokens, prompt_text=text)
            async for ch in self.generator.stream(spec):
                if ch.n_tokens > 0:  # the chunk's own arrival stamp, as the generation runs time tokens
                    if n_answer == 0:
                        stamp("first", ch.t_ns)
                    stamp("last", ch.t_ns)
                n_answer += ch.n_tokens
            if n_answer == 0:
                raise AdapterError("stream", "the generation engine streamed no answer token")
            return len(ids), n_answer, kept
        except AdapterError as e:
            e.stage = stage  # type: ignore[attr-defined]
            raise


async def drive(pipe: Pipeline, schedule: RagSchedule, timeout_s: float = 600.0) -> list[RagRecord]:
    """Send every scheduled question at its time; the records in schedule order."""
    t0 = time.perf_counter_ns() + START_LEAD_NS

    async def one(i: int, t_sched: int) -> RagRecord:
        plan = schedule.requests[i]
        marks: dict[str, int] = {}
        t_send = time.perf_counter_ns()

        def stamp(name: str, t_ns: int | None = None) -> None:
            marks[name] = (t_ns if t_ns is not None else time.perf_counter_ns()) - t0

        def rec(**kw: object) -> RagRecord:
            done = marks["last"] if "last" in marks and "error_kind" not in kw else time.perf_counter_ns() - t0
            return RagRecord(i, plan.warmup, t_sched - t0, t_send - t0, marks.get("embed"), marks.get("search"),
                             marks.get("rerank"), marks.get("first"), done, **kw)  # type: ignore[arg-type]

        try:
            async with asyncio.timeout(timeout_s):
                n_prompt, n_answer, kept = await pipe.answer(f"q{i}", plan.query, stamp)
        except AdapterError as e:
            return rec(failed_stage=getattr(e, "stage", None), error_kind=e.kind, error=str(e)[:300])
        except TimeoutError:
            return rec(failed_stage=next((s for s in STAGES if s not in marks), "generate"), error_kind="timeout",
                       error=f"no answer within {timeout_s:g} s")
        return rec(n_prompt=n_prompt, n_answer=n_answer, passages=kept)

    try:
        return await send_on_schedule([plan.t_s for plan in schedule.requests], t0, one)
    finally:
        for a in (pipe.embedder, pipe.reranker, pipe.generator):
            if a is not None:
                await a.aclose()
