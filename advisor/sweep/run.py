"""`advisor sweep`: rising request rates (or users) on one engine until the SLOs break.

The engine starts once and serves every step; each step is an ordinary saved
run under runs/<run-id>/. `runs/<sweep-id>/sweep.json` is written when the
sweep starts and after every step: its plan (so `--resume` can go on), each
finished step, the step a signal interrupted, the capacity and why it
stopped. The sweep stops early when a step is clearly past saturation
(`advisor.sweep.capacity.stop_reason`). Capacity rests only on finished steps.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from adapters.base import Adapter
from advisor.run.bench import BenchConfig, RunInterrupted, check_fits, plan, run_bench
from advisor.run.config import SweepConfig, SweepError
from advisor.saved.atomic import write_atomic
from advisor.saved.redact import redact_text
from advisor.saved.store import RunNotSaved, RunResult, item_folder
from advisor.sweep.capacity import Capacity, SweepPoint, capacity_from_sweep, stop_reason

SCHEMA = "advisor.sweep/2"
READABLE = ("advisor.sweep/1", SCHEMA)
SWEEP_FILE = "sweep.json"


class SweepInterrupted(RunInterrupted):
    """A signal stopped a sweep's step: the step's partial run (`result`) and the sweep (`sweep`) are saved."""

    def __init__(self, signum: int, result: RunResult, sweep: SweepResult) -> None:
        super().__init__(signum, result)
        self.sweep = sweep

    def resume_text(self) -> str:
        """What the console says after the partial run: where the sweep is, what it kept, how to go on."""
        n = len(self.sweep.points)
        return (f"sweep saved: {self.sweep.path} ({n} finished step{'' if n == 1 else 's'} kept; the interrupted "
                f"step is not counted); resume with `{resume_command(self.sweep.sweep_id, self.out_dir)}`")

    @property
    def out_dir(self) -> Path:
        """The --out folder the sweep was saved under (where --resume must look)."""
        return self.sweep.path.parent if self.sweep.path is not None else Path("runs")


@dataclass
class SweepResult:
    sweep_id: str
    scenario: str
    engine: str
    model: str | None
    created_utc: str
    points: tuple[SweepPoint, ...]
    capacity: Capacity
    stop_reason: str
    state: Literal["running", "interrupted", "error", "done"] = "done"  # error: stopped by one (a full disk)
    config: dict[str, Any] = field(default_factory=dict)
    interrupted: dict[str, Any] | None = None  # the step a signal stopped: load, run id, signal
    unit: Literal["rps", "users"] = "rps"
    path: Path | None = None

    def to_dict(self) -> dict[str, Any]:  # hand-written: a shape no field states (steps; read leniently)
        return {"schema": SCHEMA, "sweep_id": self.sweep_id, "scenario": self.scenario, "engine": self.engine,
                "model": self.model, "created_utc": self.created_utc, "state": self.state, "unit": self.unit,
                "config": self.config, "interrupted": self.interrupted,
                "steps": [{"rate_rps": p.rate_rps, "concurrency": p.concurrency, "run_id": p.run_id,
                           "run_ids": list(p.run_ids or (p.run_id,)), "group_id": p.group_id,
                           "passes": p.passes, "point": p.to_dict()} for p in self.points],
                "capacity": self.capacity.to_dict(), "stop_reason": self.stop_reason}

    def save(self, root: Path) -> Path:
        folder = Path(root) / self.sweep_id
        text = redact_text(json.dumps(self.to_dict(), indent=1, allow_nan=False))  # no secret in any file
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / SWEEP_FILE, text)  # a reader (or --resume) never sees half a file
        self.path = folder
        return folder


def new_sweep_id(scenario_name: str, engine: str, unit: str) -> str:
    """Unique, and never a path: the scenario's own name, not the file it was read from."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{scenario_name}-{engine}")[:60].strip("-")
    kind = "sweep-users" if unit == "users" else "sweep"
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{kind}-{slug}-{secrets.token_hex(3)}"


def load_sweep(path_or_id: str | Path, root: Path = Path("runs")) -> SweepResult:
    """A sweep by folder, sweep.json path, or id under `root`."""
    p = item_folder(path_or_id, root) / SWEEP_FILE
    if not p.is_file():
        raise SweepError(f"no sweep at {path_or_id} (looked for {p}); run `advisor sweep` first")
    try:
        d = json.loads(p.read_text())
        if d.get("schema") not in READABLE:
            raise SweepError(f"{p}: not an advisor sweep (schema {d.get('schema')!r})")
        points = tuple(SweepPoint.from_dict(s["point"]) for s in d["steps"])
    except json.JSONDecodeError as e:
        raise SweepError(f"{p}: not valid JSON ({e}); re-run the sweep") from None
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, SweepError):
            raise
        raise SweepError(f"{p}: damaged sweep file ({type(e).__name__}: {e}); re-run the sweep") from None
    cap = _capacity(list(points), d.get("interrupted") if d.get("state") == "interrupted" else None, d["sweep_id"],
                    p.parent.parent, d.get("unit", "rps"))
    return SweepResult(d["sweep_id"], d["scenario"], d["engine"], d.get("model"), d["created_utc"], points, cap,
                       d.get("stop_reason", ""), d.get("state", "done"), d.get("config", {}), d.get("interrupted"),
                       d.get("unit", "rps"), p.parent)


LOCK_FILE = ".sweep.lock"  # held (flock) by the process running the sweep; the kernel drops it when that ends


@contextlib.contextmanager
def sweep_lock(folder: Path) -> Iterator[None]:
    """Hold the sweep's lock while running it: a second `sweep --resume` of the same sweep is refused."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            raise SweepError(f"sweep {folder.name} is running in another advisor (pid {holder}); wait for it to "
                             "finish or stop it, then resume") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)  # releases the lock


def abandoned(folder: Path) -> bool:
    """A sweep saved as running that no process runs (nobody holds its lock): it was killed or its machine went.

    Reads the lock without creating it, so a read-only folder (a copied sweep) can be asked too."""
    lock = folder / LOCK_FILE
    if not lock.is_file():
        return True
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def check_unlocked(folder: Path) -> None:
    """Refuse now (before an engine starts) when another advisor runs this sweep."""
    if folder.is_dir():
        with sweep_lock(folder):
            pass


def resume_command(sweep_id: str, out_dir: Path) -> str:
    """The command that goes on with a sweep: `--resume` looks in `--out`, so a sweep saved elsewhere names it."""
    out = "" if Path(out_dir) == Path("runs") else f" --out {shlex.quote(str(out_dir))}"
    return f"advisor sweep --resume {sweep_id}{out}"


def _capacity(points: list[SweepPoint], interrupted: dict[str, Any] | None, sweep_id: str, out_dir: Path,
              unit: str) -> Capacity:
    resume = f"resume with `{resume_command(sweep_id, out_dir)}`"
    if not points:
        return Capacity(None, None, None, "no step finished" + (f"; {resume}" if interrupted else ""))
    cap = capacity_from_sweep(points)
    if interrupted:
        at = f"{interrupted['load']:g} {'users' if unit == 'users' else 'req/s'}"
        return replace(cap, reason=f"{cap.reason}; the sweep was interrupted at {at} (that step is not counted): "
                                   f"{resume}")
    return cap


def run_sweep(cfg: SweepConfig, adapter: Adapter | None, on_step: Callable[[SweepPoint], None] | None = None,
              resume: SweepResult | None = None,
              measure: Callable[[BenchConfig], RunResult] | None = None) -> SweepResult:
    """Run the plan's steps on one started engine; saves after every step; a signal ends it cleanly.

    With `resume`, finished steps are kept and not run again. Raises the step's RunInterrupted after
    saving the sweep as interrupted, as a SweepInterrupted. `measure` replaces `run_bench(step, adapter)` (tests).
    """
    if measure is None:
        assert adapter is not None, "run_sweep needs a started adapter"
        measure = lambda step: run_bench(step, adapter)  # noqa: E731
    scenario_name = plan(cfg.step_config(cfg.load_plan()[0])).scenario.name
    if adapter is not None:  # a refused sweep writes nothing: every step must fit the engine before sweep.json
        for load in cfg.load_plan():
            check_fits(plan(cfg.step_config(load)).schedule, adapter.info, cfg.bench.max_request_tokens)
    points = list(resume.points) if resume else []
    res = resume or SweepResult(new_sweep_id(scenario_name, cfg.bench.engine, cfg.unit), scenario_name,
                                cfg.bench.engine, cfg.bench.model, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                (), Capacity(None, None, None, "no step finished yet"), "", "running", cfg.to_dict(),
                                None, cfg.unit)
    with sweep_lock(Path(cfg.bench.out_dir) / res.sweep_id):
        return _run_locked(cfg, res, points, measure, adapter, on_step)


def _run_locked(cfg: SweepConfig, res: SweepResult, points: list[SweepPoint],
                measure: Callable[[BenchConfig], RunResult], adapter: Adapter | None,
                on_step: Callable[[SweepPoint], None] | None) -> SweepResult:
    res.state, res.interrupted = "running", None
    res.save(cfg.bench.out_dir)
    done = {p.concurrency if cfg.unit == "users" else p.rate_rps for p in points}
    why = stop_reason(points) or ""
    for load in cfg.load_plan():
        if why:
            break
        if load in done:
            continue
        try:
            point = _step(cfg, load, measure, adapter, res.sweep_id)
        except RunNotSaved as e:  # the step was measured but not written: the sweep cannot go on here
            raise _stopped(cfg, res, points, load, str(e).split(";")[0]) from e
        except RunInterrupted as e:
            res.points, res.state = tuple(points), "interrupted"
            res.interrupted = {"load": load, "run_id": e.result.run_id, "signal": e.name}
            res.capacity = _capacity(points, res.interrupted, res.sweep_id, cfg.bench.out_dir, cfg.unit)
            res.stop_reason = f"interrupted by {e.name} at {load:g} {cfg.unit}"
            res.save(cfg.bench.out_dir)
            raise SweepInterrupted(e.signum, e.result, res) from e
        points.append(point)
        if on_step:
            on_step(points[-1])
        why = stop_reason(points) or ""
        res.points, res.capacity = tuple(points), _capacity(points, None, res.sweep_id, cfg.bench.out_dir, cfg.unit)
        try:
            res.save(cfg.bench.out_dir)
        except OSError as e:
            raise _stopped(cfg, res, points, load, f"sweep.json could not be saved: {e.strerror or e}") from e
    res.points, res.state = tuple(points), "done"
    res.capacity = _capacity(points, None, res.sweep_id, cfg.bench.out_dir, cfg.unit)
    res.stop_reason = why or f"all {len(cfg.load_plan())} planned steps run"
    res.save(cfg.bench.out_dir)
    return res


def _stopped(cfg: SweepConfig, res: SweepResult, points: list[SweepPoint], load: float, why: str) -> SweepError:
    """A sweep an error stopped at `load` (a full disk): saved as `error` where it still can be, and the error to
    raise, which says what was kept and how to go on."""
    res.points, res.state, res.interrupted = tuple(points), "error", None
    res.capacity = _capacity(points, None, res.sweep_id, cfg.bench.out_dir, cfg.unit)
    res.stop_reason = f"stopped by an error at {load:g} {cfg.unit}: {why}"
    try:
        res.save(cfg.bench.out_dir)
        saved = f"{Path(cfg.bench.out_dir) / res.sweep_id / SWEEP_FILE} says so"
    except OSError as e:  # the disk is still full: its last save stands (it says 'running' until a resume)
        saved = f"{SWEEP_FILE} could not be updated ({e.strerror or e})"
    n = len(points)
    return SweepError(f"sweep {res.sweep_id} stopped at {load:g} {'users' if cfg.unit == 'users' else 'req/s'}: "
                      f"{why}; {n} finished step{'' if n == 1 else 's'} kept, {saved}; free space under --out, then "
                      f"resume with `{resume_command(res.sweep_id, cfg.bench.out_dir)}`")


def _step(cfg: SweepConfig, load: float, measure: Callable[[BenchConfig], RunResult], adapter: Adapter | None,
          sweep_id: str) -> SweepPoint:
    """One step: one run, or `cfg.repeats` runs grouped (the engine restarted between them when asked)."""
    step = cfg.step_config(load)
    users = int(load) if cfg.unit == "users" else None
    if cfg.repeats == 1 and not cfg.restart_engine:
        run = measure(step)
        rate = load if users is None else float(run.summary.requests_per_s or 0)
        return SweepPoint.from_run(rate, run, concurrency=users)
    from advisor.repeats.group import run_repeats

    def one(i: int) -> RunResult:
        if cfg.restart_engine and adapter is not None and i > 0:
            adapter.close()
            adapter.start(timeout_s=cfg.bench.timeout_s)
        return measure(step)

    group = run_repeats(one, cfg.repeats, label=f"{sweep_id}-{load:g}", restart_engine=cfg.restart_engine)
    return SweepPoint.from_group(load if users is None else None, list(group.runs), group.group_id, concurrency=users)


def resume_config(sweep: SweepResult, out_dir: Path) -> SweepConfig:
    """The config a saved sweep was started with, to go on where it stopped."""
    if sweep.state == "done":
        raise SweepError(f"sweep {sweep.sweep_id} is finished ({sweep.stop_reason}); start a new one")
    if not sweep.config:
        raise SweepError(f"sweep {sweep.sweep_id} was saved without its plan (an older advisor): start a new one")
    try:
        return SweepConfig.from_dict(sweep.config, out_dir)
    except (KeyError, TypeError, ValueError) as e:
        raise SweepError(f"sweep {sweep.sweep_id}: its saved plan cannot be used ({e}); start a new one") from None
