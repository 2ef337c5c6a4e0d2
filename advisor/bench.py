"""One benchmark run: scenario -> schedule -> adapter -> records -> summary -> saved run.

`run_bench(cfg)` is what `advisor bench`, the sweep and the dashboard call.
Nothing measured is ever lost: a failed request is an errored record, and an
interrupted or failing run still saves what it measured, marked INVALID.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import adapters
from adapters.base import Adapter, EngineInfo, RequestSpec
from advisor import manifest
from advisor.loadgen import LoadResult, drive
from advisor.metrics import summarize, verdict
from advisor.store import RunResult, new_run_id
from advisor.telemetry import Telemetry
from scenarios.catalog import load_scenario
from scenarios.prompts import make_prompt_ids
from scenarios.schedule import Overrides, build_schedule, resolve
from scenarios.types import Schedule

# Token ids below this are left out of synthetic prompts: they are special tokens
# (BOS/EOS/PAD) in the models the tool makes, and in most real vocabularies.
_FIRST_PROMPT_TOKEN = 3


class BenchError(ValueError):
    """A benchmark that cannot run as asked; the message says what to change."""


@dataclass(frozen=True)
class BenchConfig:
    scenario: str
    engine: str = "own"
    model: str | None = None
    overrides: Overrides = field(default_factory=Overrides)
    engine_options: dict[str, Any] = field(default_factory=dict)
    out_dir: Path = Path("runs")
    timeout_s: float = 600.0  # per request
    max_run_s: float | None = None  # whole run; None: the schedule's length plus drain time
    telemetry_interval_s: float = 1.0
    quiet: bool = True


def plan(cfg: BenchConfig) -> tuple[Any, Schedule]:
    """Load the scenario and build its schedule (no engine involved)."""
    scenario = load_scenario(cfg.scenario)
    return scenario, build_schedule(scenario, seed=cfg.overrides.seed or 0, overrides=cfg.overrides)


def effective_settings(cfg: BenchConfig, scenario: Any) -> dict[str, Any]:
    """What was actually run after the scenario's small-machine fit and the user's overrides."""
    return resolve(scenario, cfg.overrides, seed=cfg.overrides.seed or 0).to_dict()


def make_specs(schedule: Schedule, info: EngineInfo) -> list[RequestSpec]:
    """Concrete prompts for this engine's vocabulary; refuses a schedule the model cannot hold."""
    vocab = info.vocab_size or 32000
    longest = max((r.n_in + r.n_out for r in schedule.requests), default=0)
    if info.max_model_len and longest > info.max_model_len:
        raise BenchError(
            f"scenario '{schedule.scenario}' has requests of up to {longest} tokens (prompt + output) but the model "
            f"holds {info.max_model_len}: cap lengths with --max-input-tokens/--max-output-tokens or --length-scale")
    return [RequestSpec(request_id=f"{schedule.scenario}-{r.idx}",
                        prompt_ids=make_prompt_ids(r, schedule.seed, vocab, token_range=(_FIRST_PROMPT_TOKEN, vocab)),
                        max_tokens=r.n_out, min_tokens=r.n_out, ignore_eos=True)
            for r in schedule.requests]


def run_bench(cfg: BenchConfig, adapter: Adapter | None = None,
              progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Run one benchmark and save it under cfg.out_dir/<run_id>/.

    A given `adapter` must be started already (a sweep reuses one engine); it is
    left open. Otherwise the adapter is created, started and closed here.
    """
    scenario, schedule = plan(cfg)
    own_adapter = adapter is None
    if adapter is None:
        adapter = adapters.create(cfg.engine, cfg.model, **cfg.engine_options)
        info = adapter.start()
    else:
        info = getattr(adapter, "info", None) or adapter.start()
    try:
        specs = make_specs(schedule, info)
        run_id = new_run_id(schedule.scenario, info.adapter)
        holder: dict[str, RunResult] = {}
        asyncio.run(_run(cfg, scenario, schedule, adapter, info, specs, run_id, progress, holder))
        return holder["result"]
    finally:
        if own_adapter:
            close(adapter)


def close(adapter: Adapter) -> None:
    adapter.close()


def _max_run_s(cfg: BenchConfig, schedule: Schedule) -> float | None:
    if cfg.max_run_s is not None:
        return cfg.max_run_s
    if schedule.mode == "open":
        last = max((r.t_sched_s for r in schedule.requests), default=0.0)
        return last + cfg.timeout_s + 30.0
    return None


async def _run(cfg: BenchConfig, scenario: Any, schedule: Schedule, adapter: Adapter, info: EngineInfo,
               specs: list[RequestSpec], run_id: str, progress: Callable[[int, int], None] | None,
               holder: dict[str, RunResult]) -> None:
    telemetry = Telemetry(adapter, info.pid, cfg.telemetry_interval_s)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load: LoadResult | None = None
    t0 = time.perf_counter_ns()
    telemetry.start(t0)
    try:
        load = await drive(adapter, schedule, specs, timeout_s=cfg.timeout_s,
                           max_run_s=_max_run_s(cfg, schedule), progress=progress)
    finally:
        telemetry.stop()
        aclose = getattr(adapter, "aclose", None)
        if aclose is not None:  # loop-bound resources (HTTP sessions) end with this loop
            await aclose()
        if load is None:  # cancelled from outside (Ctrl-C): nothing was handed back
            load = LoadResult([], t0, (time.perf_counter_ns() - t0) / 1e9, "interrupted before any record")
        notes = tuple(getattr(adapter, "notes", None) or ())  # some are learned only while serving
        if notes:
            info = replace(info, notes=tuple(dict.fromkeys((*info.notes, *notes))))
        holder["result"] = _finish(cfg, scenario, schedule, info, load, telemetry, run_id, created)


def _finish(cfg: BenchConfig, scenario: Any, schedule: Schedule, info: EngineInfo, load: LoadResult,
            telemetry: Telemetry, run_id: str, created: str) -> RunResult:
    # Telemetry runs on its own clock from just before drive(); records are relative to load.t0_ns.
    shift_s = (load.t0_ns - telemetry.t0_ns) / 1e9
    window_ns = None
    if schedule.mode == "open":
        w0, w1 = schedule.window_s
        window_ns = (int(w0 * 1e9), int(w1 * 1e9))
    offered = _offered_rps(schedule)
    summary = summarize(load.records, mode=schedule.mode, slos=schedule.slos, window_ns=window_ns, offered_rps=offered)
    summary_d = summary.to_dict()
    v = verdict(summary, mode=schedule.mode)
    reasons = list(v.reasons)
    status = v.status
    if load.interrupted:
        status, reasons = "INVALID", [f"run {load.interrupted}; the results are partial", *reasons]
    window_s = (window_ns[0] / 1e9 + shift_s, window_ns[1] / 1e9 + shift_s) if window_ns else None
    # GPU energy is read over the window, so it is divided by the tokens that arrived inside it.
    tokens_in_window = (summary_d.get("output_tokens_per_s") or 0.0) * (summary_d.get("window_s") or 0.0)
    tele = telemetry.summary(window_s, round(tokens_in_window) or None)
    result = RunResult(
        run_id=run_id, created_utc=created,
        scenario=scenario.model_dump(mode="json"),
        schedule={"mode": schedule.mode, "seed": schedule.seed, "overrides": dict(schedule.overrides),
                  "n_requests": len(schedule.requests), "offered_rps": offered, "warmup_s": schedule.warmup_s,
                  "duration_s": schedule.duration_s, "concurrency": schedule.concurrency,
                  "effective": effective_settings(cfg, scenario)},
        slos={"ttft_ms": schedule.slos.ttft_ms, "tpot_ms": schedule.slos.tpot_ms, "e2e_ms": schedule.slos.e2e_ms,
              "percentile": schedule.slos.percentile},
        engine=_engine_dict(info), manifest=manifest.collect(), summary=summary_d, telemetry=tele,
        verdict={"status": status, "reasons": reasons},
        loadgen={"lag_ms": summary_d.get("client_queue_ms"), "wall_s": load.wall_s, "interrupted": load.interrupted},
    )
    folder = result.save(cfg.out_dir, load.records)
    server_log = info.extra.get("server_log")
    if server_log and Path(server_log).is_file():  # a managed server's log stays with the run
        shutil.copyfile(server_log, folder / "server.log")
    return result


def _offered_rps(schedule: Schedule) -> float | None:
    if schedule.mode != "open" or schedule.duration_s <= 0:
        return None
    w0, w1 = schedule.window_s
    n = sum(1 for r in schedule.requests if w0 <= r.t_sched_s < w1)
    return n / (w1 - w0)


def _engine_dict(info: EngineInfo) -> dict[str, Any]:
    d = asdict(info)
    d["notes"] = list(info.notes)
    return d


