"""One benchmark run: plan -> started engine -> drive the schedule -> summary -> saved run.

`plan(cfg)` checks everything that can be checked before an engine starts
(scenario, overrides, engine options, the output folder). `open_engine(cfg)`
creates and starts the engine once and always closes it. `run_bench(cfg,
adapter)` measures one run on a started engine and saves it: a sweep calls it
once per step on the same engine. Nothing measured is ever lost: a failed
request is an errored record, and an interrupted run (SIGINT, SIGTERM, SIGHUP)
is saved, marked INVALID, before `RunInterrupted` tells the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import adapters
from adapters import json_codec, launch
from adapters.base import Adapter, EngineInfo, EngineOptions
from adapters.placement import available_cpus, client_pinned
from advisor.loadgen import eventloop, stall, worker_spec, workers
from advisor.loadgen.drive import LoadResult, drive
from advisor.loadgen.info import LoadgenInfo
from advisor.loadgen.spec_source import spec_source
from advisor.metrics import lag as lag_mod
from advisor.metrics import summarize, verdict
from advisor.metrics.summary import cut_by_stop
from advisor.metrics.verdict import Verdict
from advisor.run import interrupts, manifest, memory_budget
from advisor.run.config import DEFAULT_MAX_REQUEST_TOKENS, BenchConfig, BenchError
from advisor.run.schedule import RunSchedule
from advisor.run.window import capped, compute_offered_rps, real_window_ns
from advisor.saved import redact
from advisor.saved.store import RunNotSaved, RunResult, new_run_id
from advisor.telemetry import Telemetry
from scenarios.catalog import load_scenario
from scenarios.prompts import MAX_PROMPT_TOKENS
from scenarios.schedule import build_schedule
from scenarios.spec import Scenario
from scenarios.types import Schedule


class RunInterrupted(interrupts.Interrupted):
    """A signal stopped a run; the partial run was saved first (`result`)."""

    def __init__(self, signum: int, result: RunResult) -> None:
        super().__init__(signum)
        self.result = result


@dataclass(frozen=True)
class Plan:
    """What will run, settled before any engine starts."""

    scenario: Scenario
    schedule: Schedule
    options: EngineOptions  # the engine's typed options


def plan(cfg: BenchConfig) -> Plan:
    """Load the scenario, build its schedule, type the engine options, check the output folder."""
    scenario = load_scenario(cfg.scenario)
    seed = cfg.overrides.seed or 0
    try:  # from the settings alone, before a schedule of a million requests is drawn
        memory_budget.check(scenario, cfg.overrides, seed, cfg.memory_budget_gb)
    except memory_budget.MemoryBudgetError as e:
        raise BenchError(str(e)) from None
    schedule = build_schedule(scenario, seed=seed, overrides=cfg.overrides)
    if not schedule.requests:
        raise BenchError(f"scenario '{scenario.name}' with these settings schedules no request; raise --duration "
                         "or --rate")
    longest = _longest(schedule)
    if longest > MAX_PROMPT_TOKENS:  # no engine can make this fit in advisor's memory: refuse before it starts
        raise BenchError(f"scenario '{scenario.name}' has requests of up to {longest:,} tokens (prompt + output); "
                         f"advisor builds at most {MAX_PROMPT_TOKENS:,}: lower --length-scale or cap lengths with "
                         "--max-input-tokens/--max-output-tokens")
    if longest > cfg.max_request_tokens and not adapters.adapter_class(cfg.engine).capabilities.served:
        _over_ceiling(schedule.scenario, longest, cfg.max_request_tokens)  # an in-process engine: refuse now
    options = adapters.parse_options(cfg.engine, cfg.engine_options)
    if worker_spec.several(cfg.workers) and not adapters.adapter_class(cfg.engine).capabilities.served:
        raise BenchError(f"--workers {cfg.workers}: only a served engine (openai) is driven by several processes; "
                         f"'{cfg.engine}' runs in advisor and keeps one driver: use --workers auto or 1")
    try:
        worker_spec.check_here(cfg.workers, len(available_cpus()))  # a sweep resumed or a matrix cell: on its machine
    except worker_spec.WorkersError as e:
        raise BenchError(str(e)) from None
    if worker_spec.on_ray(cfg.workers) is not None:
        from advisor.loadgen.ray_workers import preflight

        try:
            preflight(cfg.ray_address)  # Ray installed, a given cluster reachable: before an engine starts
        except RuntimeError as e:
            raise BenchError(str(e)) from None
    check_out_dir(cfg.out_dir)
    redact.remember_options(cfg.engine_options)  # its secrets are hidden in every file advisor writes
    try:
        eventloop.name()  # a bad ADVISOR_EVENT_LOOP fails here, before an engine starts
    except ValueError as e:
        raise BenchError(str(e)) from None
    return Plan(scenario, schedule, options)


def check_out_dir(out_dir: Path) -> None:
    """Fail now, not after the run, when runs cannot be saved under `out_dir`; leaves nothing behind (a refused
    command writes nothing: the folder is made when the first run is saved). The nearest folder that exists is
    tried with a real write, a file or a folder made and removed at once: a permission check alone passes for
    root where nothing can be made (/proc)."""
    out_dir = Path(out_dir)
    existing = next((p for p in (out_dir, *out_dir.absolute().parents) if p.exists()), None)
    try:
        if existing is None or not existing.is_dir():
            raise NotADirectoryError(20, f"{existing} is not a folder")
        if existing == out_dir:
            with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".advisor-write-check-"):
                pass
        else:
            os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".advisor-write-check-"))
    except OSError as e:
        raise BenchError(f"cannot save runs under --out {out_dir}: {e.strerror or e}; choose a writable folder") \
            from None


@contextlib.contextmanager
def open_engine(cfg: BenchConfig, options: EngineOptions | None = None) -> Iterator[Adapter]:
    """Create and start the engine once; it is closed however the block ends (signals included)."""
    adapter = adapters.create(cfg.engine, cfg.model, options if options is not None else cfg.engine_options)
    try:
        adapter.start(timeout_s=cfg.timeout_s)
        yield adapter
    finally:
        adapter.close()


def _longest(schedule: Schedule) -> int:
    return max((r.n_in + r.n_out for r in schedule.requests), default=0)


def _over_ceiling(scenario: str, longest: int, ceiling: int) -> None:
    raise BenchError(
        f"scenario '{scenario}' has requests of up to {longest:,} tokens (prompt + output), past advisor's ceiling "
        f"of {ceiling:,} for an engine that states no context length: lower --length-scale, cap lengths with "
        f"--max-input-tokens/--max-output-tokens, or raise --max-request-tokens (at most {MAX_PROMPT_TOKENS:,})")


def check_fits(schedule: Schedule, info: EngineInfo, ceiling: int = DEFAULT_MAX_REQUEST_TOKENS) -> None:
    """Refuse a schedule the model cannot hold, before anything is measured: the engine's context when it states
    one, else `ceiling` (what advisor builds in memory for one request)."""
    if schedule.sessions is not None:
        _check_sessions_fit(schedule, info, ceiling)
        return
    longest = _longest(schedule)
    if not info.max_model_len and longest > ceiling:
        _over_ceiling(schedule.scenario, longest, ceiling)
    if info.max_model_len and longest > info.max_model_len:
        raise BenchError(
            f"scenario '{schedule.scenario}' has requests of up to {longest} tokens (prompt + output) but the model "
            f"holds {info.max_model_len}: cap lengths with --max-input-tokens/--max-output-tokens or --length-scale")


def _check_sessions_fit(schedule: Schedule, info: EngineInfo, ceiling: int) -> None:
    """Every turn must fit with only the first message kept (older turns are dropped as the context fills)."""
    assert schedule.sessions is not None
    limits = [x for x in (info.max_model_len, schedule.sessions.max_context_tokens) if x] or [ceiling]
    limit, first = min(limits), 0
    for r in schedule.requests:
        first = r.n_in if r.turn == 0 else first
        need = r.n_in + r.n_out + (first if r.turn > 0 else 0)
        if need > limit:
            raise BenchError(
                f"scenario '{schedule.scenario}': turn {r.turn} of session {r.session_id} needs {need} tokens (first "
                f"message + its message + output) but the context holds {limit}, even with every earlier turn dropped;"
                " cap lengths with --max-input-tokens/--max-output-tokens or --length-scale")


def run_bench(cfg: BenchConfig, adapter: Adapter, progress: Callable[[int, int], None] | None = None,
              planned: Plan | None = None) -> RunResult:
    """Measure one run on a started engine and save it under cfg.out_dir/<run_id>/; the engine stays up.

    Raises RunInterrupted (after saving the partial run) when a signal stopped it.
    """
    p = planned or plan(cfg)
    info = adapter.info  # the engine is started once by the caller, never here
    check_fits(p.schedule, info, cfg.max_request_tokens)
    run_id = new_run_id(p.scenario.name, info.adapter)
    # saved exactly once: once measuring begins, a second signal waits for the save (advisor.run.interrupts)
    with client_pinned(info.placement), interrupts.guarded("the run") as guard:
        result, signum = eventloop.run(_measure(cfg, p, adapter, info, run_id, progress))
    signum = signum if signum is not None else guard.stop  # a signal while it was being saved: stop now
    if signum is not None:
        raise RunInterrupted(signum, result)
    return result


def bench_once(cfg: BenchConfig, progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Plan, start the engine, measure one run, close the engine: what `advisor bench` does."""
    p = plan(cfg)
    with open_engine(cfg, p.options) as adapter:
        return run_bench(cfg, adapter, progress, planned=p)


def _max_run_s(cfg: BenchConfig, schedule: Schedule) -> float | None:
    if cfg.max_run_s is not None:
        return cfg.max_run_s
    if schedule.sessions is not None and schedule.sessions.window_end_s is not None:
        return schedule.sessions.window_end_s + cfg.timeout_s + 30.0  # no turn is sent after the window
    if schedule.mode == "open" and schedule.sessions is None:
        last = max((r.t_sched_s for r in schedule.requests), default=0.0)
        return last + cfg.timeout_s + 30.0
    return None


async def _measure(cfg: BenchConfig, p: Plan, adapter: Adapter, info: EngineInfo, run_id: str,
                   progress: Callable[[int, int], None] | None) -> tuple[RunResult, int | None]:
    telemetry = Telemetry(adapter, info.pid, cfg.telemetry_interval_s)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t_start = time.perf_counter_ns()
    telemetry.start(t_start)
    n_ray = worker_spec.on_ray(cfg.workers)
    n_workers = workers.count(n_ray or cfg.workers, served=adapter.capabilities.served, placement=info.placement,
                              schedule=p.schedule, auto_cap=cfg.auto_workers_cap)
    client = adapter.worker_client() if n_workers > 1 or n_ray else None
    cpu0 = time.process_time()
    if client is not None and n_ray:
        from advisor.loadgen.ray_workers import drive_ray_workers

        task = asyncio.create_task(drive_ray_workers(
            client, p.schedule, n_workers, address=cfg.ray_address, timeout_s=cfg.timeout_s,
            max_run_s=_max_run_s(cfg, p.schedule), progress=progress))
    elif client is not None:
        task = asyncio.create_task(workers.drive_workers(
            client, p.schedule, n_workers, timeout_s=cfg.timeout_s, max_run_s=_max_run_s(cfg, p.schedule),
            progress=progress, cpus=workers.pinning(n_workers, info.placement)))
    else:
        task = asyncio.create_task(drive(adapter, p.schedule, spec_source(p.schedule, info, adapter), timeout_s=cfg.timeout_s,
                                         max_run_s=_max_run_s(cfg, p.schedule), progress=progress,
                                         on_stall=stall.print_stall, stall_every_s=cfg.stall_every_s))
    signum: int | None = None
    try:
        with interrupts.cancelling(task, asyncio.get_running_loop()) as run:
            try:
                load = await asyncio.shield(task)
            except asyncio.CancelledError:  # cancelled from outside (asyncio.run's own Ctrl-C handling)
                task.cancel()
                load = await task
                run.signum = run.signum or signal.SIGINT
            signum = run.signum
    finally:
        telemetry.stop()
        await adapter.aclose()  # loop-bound resources (HTTP sessions, engine channel) end with this loop
    if not load.workers:  # one driver: this process
        load.workers = [{"worker": 0, "pid": os.getpid(), "cpus": info.placement.get("client_cpus"), "exit": "done",
                         "n_requests": len(load.records), "n_finished": load.n_finished,
                         "cpu_s": round(time.process_time() - cpu0, 4), "wall_s": round(load.wall_s, 4),
                         "interrupted": load.interrupted,
                         **workers.lag_and_cpu(load.records, time.process_time() - cpu0)}]
    notes = (*adapter.notes, *load.notes)  # some are learned only while serving
    if notes:
        info = replace(info, notes=tuple(dict.fromkeys((*info.notes, *notes))))
    return _finish(cfg, p, info, load, telemetry, run_id, created, t_start, signum), signum


def _finish(cfg: BenchConfig, p: Plan, info: EngineInfo, load: LoadResult, telemetry: Telemetry, run_id: str,
            created: str, t_start_ns: int, signum: int | None) -> RunResult:
    schedule = p.schedule
    # Telemetry runs on its own clock from just before drive(); records are relative to load.t0_ns.
    shift_s = (load.t0_ns - telemetry.t0_ns) / 1e9
    window_ns = None
    if schedule.mode == "open":
        w0, w1 = schedule.window_s
        window_ns = (int(w0 * 1e9), int(w1 * 1e9))
    # A signal stops the run where the user chose: it is measured up to there (docs/metrics.md, "interrupted").
    stopped_ns = int(load.wall_s * 1e9) if signum is not None else None
    real_ns = real_window_ns(window_ns, load.records, stopped_ns, capped(schedule))
    # every rate, the offered one too, over the real window
    offered = compute_offered_rps(schedule, load.records, real_ns)
    if real_ns is not None:
        window_ns = real_ns
    summary = summarize(load.records, mode=schedule.mode, slos=schedule.slos, window_ns=window_ns, offered_rps=offered,
                        stopped=signum is not None)
    v = verdict(summary, mode=schedule.mode)
    reasons = [*launch.deaths(), *v.reasons]  # a launched server that died says so first, with its exit code
    status = v.status if len(reasons) == len(v.reasons) or v.status != "VALID" else "INVALID"
    interrupted = None
    if load.interrupted:
        why = signal.Signals(signum).name if signum is not None else load.interrupted
        # measured requests only, as the figures count them: warm-up ones are neither n nor what was cut short
        measured = [r for r in load.records if not r.warmup]
        ended = sum(1 for r in measured if not cut_by_stop(r))
        interrupted = f"{why} after {ended} of {len(measured)} measured requests"
        cut = sum(1 for r in load.records if not r.warmup and cut_by_stop(r)) if signum is not None else 0
        left_out = f"; the {cut} requests it cancelled or never sent are left out of the figures" if cut else ""
        status, reasons = "INVALID", [f"interrupted ({interrupted}); the results are partial{left_out}", *reasons]
    window_s = (window_ns[0] / 1e9 + shift_s, window_ns[1] / 1e9 + shift_s) if window_ns else None
    # GPU energy is read over the window, so it is divided by the tokens that arrived inside it.
    tokens_in_window = (summary.output_tokens_per_s or 0.0) * (summary.window_s or 0.0)
    tele = telemetry.summary(window_s, round(tokens_in_window) or None)
    lag_check = summary.lag_check
    held = (lag_mod.held(offered, summary.requests_per_s, summary.n_errors, lag_check)
            if offered and lag_check else None)
    first_send = min((r.t_send_ns for r in load.records if r.t_send_ns is not None), default=None)
    result = RunResult(
        run_id=run_id, created_utc=created,
        scenario=p.scenario.model_dump(mode="json"),
        schedule=RunSchedule(mode=schedule.mode, seed=schedule.seed, overrides=schedule.overrides,
                             n_requests=len(schedule.requests), warmup_s=schedule.warmup_s,
                             duration_s=schedule.duration_s, concurrency=schedule.concurrency,
                             effective=schedule.settings),
        slos=schedule.slos,
        engine=info, manifest=manifest.collect(cfg.server_hardware), summary=summary, telemetry=tele,
        verdict=Verdict(status, tuple(reasons)),
        loadgen=LoadgenInfo(lag_ms=summary.client_queue_ms, lag_check=lag_check, held=held,
                            wall_s=load.wall_s, interrupted=interrupted,
                            signal=signal.Signals(signum).name if signum is not None else None,
                            n_finished=load.n_finished, timeout_s=cfg.timeout_s, event_loop=eventloop.name(),
                            json_codec=json_codec.name(),
                            n_workers=len(load.workers), workers=load.workers, t0_perf_counter_ns=load.t0_ns,
                            prepare_s=round((load.t0_ns - t_start_ns) / 1e9 + (first_send or 0) / 1e9, 4)),
    )
    server_log = info.extra.get("server_log")
    extra = {"server.log": Path(server_log)} if server_log and Path(server_log).is_file() else {}  # stays with it
    try:
        result.save(cfg.out_dir, load.records, extra_files=extra)
    except OSError as e:  # measured but not written: the caller still shows it all (advisor_cli.bench)
        raise RunNotSaved(result, Path(cfg.out_dir) / run_id, (*result.files, *extra), e) from None
    return result
