"""One embedding or rerank benchmark: plan the schedule, start the engine, check the inputs fit, measure, save.

Everything a user got wrong is refused before the measurement: an unknown scenario or a generation one
(`scenarios.embed_schedule`), an engine for another task (an embedder given a rerank scenario), an
engine that cannot start or a model for another task (the adapter's
start), and an input the model cannot take whole (the preflight embeds the schedule's longest request
first; an engine that would truncate it refuses it). The engine's process is sampled while the schedule runs
(`advisor.telemetry`, as generation runs are; result.json's `telemetry`) when it is a process of its own on this
machine. Saved as `runs-embed/<run-id>/` (result.json and requests.jsonl), apart from the generation runs'
folder, which every generation command reads.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from adapters import embedders
from adapters.base import AdapterError, EngineInfo, EngineUnavailable
from adapters.embed_base import EmbedAdapter, EmbedRequest
from advisor import __version__
from advisor.embed.drive import EmbedRecord, drive
from advisor.embed.metrics import EmbedSummary, summarise
from advisor.loadgen import eventloop
from advisor.run import interrupts
from advisor.telemetry import Telemetry
from advisor.telemetry.record import TelemetrySummary
from scenarios.embed_schedule import EmbedSchedule, build_embed_schedule, load_embed_scenario
from scenarios.overrides import Overrides


class EmbedInputError(ValueError):
    """The run cannot measure what it was asked to; the message names the fix."""


@dataclass(frozen=True)
class EmbedRun:
    run_id: str
    scenario: str
    engine: EngineInfo
    schedule: EmbedSchedule
    summary: EmbedSummary
    records: list[EmbedRecord]
    path: Path | None = None
    interrupted_by: int | None = None  # the signal that stopped it (its records are those finished before)
    telemetry: TelemetrySummary | None = None  # the engine process's memory (and a GPU's) while the schedule ran

    def to_dict(self) -> dict[str, Any]:  # hand-written: a shape no field states (version, host at save)
        st = self.schedule.settings
        return {"run_id": self.run_id, "task": self.schedule.task, "advisor_version": __version__, "scenario": self.scenario,
                "engine": self.engine.to_dict(), "event_loop": eventloop.name(), "schedule": {"effective": st.to_dict(), "n_requests":
                len(self.schedule.requests), "chunk_words": self.schedule.chunk_words,
                "inputs_per_request": len(self.schedule.requests[0].texts) if self.schedule.requests else None},
                "slos": self.schedule.slos.to_dict(), "host": {"machine": platform.machine(),
                "python": platform.python_version()}, "summary": self.summary.to_dict(),
                "telemetry": self.telemetry.to_dict() if self.telemetry is not None else None}


def engine_process(info: EngineInfo) -> tuple[int | None, str | None]:
    """(the engine's own process to sample, None) or (None, why its memory is not known)."""
    if info.pid is None:
        return None, "the engine is a server advisor did not start: its process is not advisor's to read"
    if info.pid == os.getpid():
        return None, ("the engine runs inside advisor's own process, beside the load generator: its memory is not "
                      "told apart")
    return info.pid, None


def preflight(adapter: EmbedAdapter, schedule: EmbedSchedule) -> None:
    """Embed the schedule's longest request once before measuring; a refusal is an EmbedInputError."""
    if not schedule.requests:
        raise EmbedInputError(f"scenario '{schedule.scenario}' schedules no request: raise --duration or --rate")
    longest = max(schedule.requests, key=lambda r: sum(len(t) for t in r.texts))

    async def once() -> None:
        try:
            await adapter.embed(EmbedRequest("preflight", longest.texts, query=longest.query))
        finally:
            await adapter.aclose()

    try:
        adapter.run_sync(once())
    except AdapterError as e:
        raise EmbedInputError(f"the engine refused the scenario's longest request before measuring ({e.kind}: {e})"
                              ) from None


def run_embed(scenario: str, engine: str, model: str | None, options: Mapping[str, Any] | None = None,
              overrides: Overrides | None = None, seed: int = 0, usd_per_hour: float | None = None,
              timeout_s: float = 600.0, out_root: Path | None = Path("runs-embed"),
              telemetry_interval_s: float = 1.0) -> EmbedRun:
    """Run one embedding benchmark; saved under `out_root` unless it is None."""
    sc = load_embed_scenario(scenario)
    schedule = build_embed_schedule(sc, seed, overrides)
    tasks = embedders.adapter_class(engine).tasks
    if schedule.task not in tasks:
        fits = [n for n in embedders.EMBED_REGISTRY if schedule.task in embedders.adapter_class(n).tasks]
        raise EmbedInputError(f"engine '{engine}' serves {', '.join(tasks)}, and scenario '{sc.name}' is a "
                              f"{schedule.task} scenario: choose {' or '.join(fits)}")
    adapter = embedders.create(engine, model, options)
    try:
        info = adapter.start()
        preflight(adapter, schedule)
        pid, no_memory = engine_process(info)
        sampler = Telemetry(None, pid, telemetry_interval_s)
        with interrupts.guarded("the run") as guard:  # saved exactly once, a signal or not
            sampler.start(time.perf_counter_ns())
            try:
                records, signum = eventloop.run(interrupts.measured(drive(adapter, schedule, timeout_s)))  # uvloop where installed
            finally:
                sampler.stop()
    finally:
        adapter.close()
    telemetry = sampler.summary(None, None)
    if no_memory is not None:
        telemetry = replace(telemetry, rss_absent_reason=no_memory)
    signum = signum if signum is not None else guard.stop
    summary = summarise(schedule, records, usd_per_hour)
    if signum is not None:  # what was measured up to the signal, saved and said to be partial
        reason = interrupts.interrupted_reason(signum, summary.n_requests, len(schedule.measured))
        summary = replace(summary, verdict="INVALID", reasons=(reason, *summary.reasons))
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{sc.name}-{engine}-{secrets.token_hex(2)}"
    run = EmbedRun(run_id, sc.name, info, schedule, summary, records, telemetry=telemetry)
    if out_root is not None:
        folder = out_root / run_id
        folder.mkdir(parents=True, exist_ok=False)
        (folder / "result.json").write_text(json.dumps(run.to_dict(), indent=1, default=str), encoding="utf-8")
        with (folder / "requests.jsonl").open("w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(asdict(r)) + "\n")
        run = replace(run, path=folder)
    return replace(run, interrupted_by=signum)



__all__ = ["EmbedInputError", "EmbedRun", "EngineUnavailable", "preflight", "run_embed"]
