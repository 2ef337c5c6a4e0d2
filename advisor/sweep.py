"""`advisor sweep`: rising request rates for one engine and scenario until the SLOs break.

The engine starts once and serves every step (`run_bench(cfg, adapter=...)`); each step
is an ordinary saved run under runs/<run-id>/. The sweep stops early when a step is
clearly past saturation (see `advisor.capacity.stop_reason`), and writes
runs/<sweep-id>/sweep.json: run ids, rate per step, capacity and stop reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.capacity import Capacity, SweepPoint, capacity_from_sweep, stop_reason
from scenarios.overrides import Overrides

SCHEMA = "advisor.sweep/1"
SWEEP_FILE = "sweep.json"


class SweepError(ValueError):
    """A sweep that cannot run or be read; the message names the fix."""


@dataclass(frozen=True)
class SweepConfig:
    scenario: str
    engine: str = "own"
    model: str | None = None
    rates: tuple[float, ...] | None = None  # explicit rates, else start x factor^i
    start_rps: float = 0.5
    factor: float = 2.0
    max_steps: int = 6
    overrides: Overrides = field(default_factory=Overrides)  # applied to every step (rate_rps is set per step)
    engine_options: dict[str, Any] = field(default_factory=dict)
    out_dir: Path = Path("runs")

    def __post_init__(self) -> None:
        if self.rates is not None and (not self.rates or any(r <= 0 for r in self.rates)):
            raise SweepError(f"--rates must be positive numbers, e.g. 0.5,1,2,4; got {self.rates}")
        if self.start_rps <= 0 or self.factor <= 1 or not 1 <= self.max_steps <= 50:
            raise SweepError(f"need --start > 0, --factor > 1 and 1 <= --max-steps <= 50; got "
                             f"{self.start_rps}, {self.factor}, {self.max_steps}")

    def rate_plan(self) -> list[float]:
        if self.rates is not None:
            return sorted(self.rates)
        return [round(self.start_rps * self.factor ** i, 6) for i in range(self.max_steps)]


@dataclass(frozen=True)
class SweepResult:
    sweep_id: str
    scenario: str
    engine: str
    model: str | None
    created_utc: str
    points: tuple[SweepPoint, ...]
    capacity: Capacity
    stop_reason: str
    path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "sweep_id": self.sweep_id, "scenario": self.scenario, "engine": self.engine,
                "model": self.model, "created_utc": self.created_utc,
                "steps": [{"rate_rps": p.rate_rps, "run_id": p.run_id, "passes": p.passes, "point": p.to_dict()}
                          for p in self.points],
                "capacity": self.capacity.to_dict(), "stop_reason": self.stop_reason}

    def save(self, root: Path) -> Path:
        folder = Path(root) / self.sweep_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / SWEEP_FILE).write_text(json.dumps(self.to_dict(), indent=1))
        return folder


def _point(d: dict[str, Any]) -> SweepPoint:
    d = dict(d)
    d["reasons"] = tuple(d.get("reasons") or ())
    return SweepPoint(**d)


def load_sweep(path_or_id: str | Path, root: Path = Path("runs")) -> SweepResult:
    """A sweep by folder, sweep.json path, or id under `root`."""
    p = Path(path_or_id)
    if p.is_dir():
        p = p / SWEEP_FILE
    elif not p.is_file():
        p = Path(root) / str(path_or_id) / SWEEP_FILE
    if not p.is_file():
        raise SweepError(f"no sweep at {path_or_id} (looked for {p}); run `advisor sweep` first")
    try:
        d = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise SweepError(f"{p}: not valid JSON ({e}); re-run the sweep") from None
    if d.get("schema") != SCHEMA:
        raise SweepError(f"{p}: not an advisor sweep (schema {d.get('schema')!r})")
    points = tuple(_point(s["point"]) for s in d["steps"])
    cap = capacity_from_sweep(points) if points else Capacity(None, None, None, "no steps")
    return SweepResult(d["sweep_id"], d["scenario"], d["engine"], d.get("model"), d["created_utc"], points, cap,
                       d["stop_reason"], p.parent)


def sweep_steps(rates: list[float], run_step: Callable[[float], dict[str, Any]],
                on_step: Callable[[SweepPoint], None] | None = None) -> tuple[list[SweepPoint], str]:
    """Run `run_step(rate)` (-> a saved run dict) for rising rates until `stop_reason` says stop."""
    points: list[SweepPoint] = []
    for rate in rates:
        points.append(SweepPoint.from_run(rate, run_step(rate)))
        if on_step:
            on_step(points[-1])
        why = stop_reason(points)
        if why:
            return points, why
    return points, f"all {len(rates)} planned rates run"


def run_sweep(cfg: SweepConfig, on_step: Callable[[SweepPoint], None] | None = None) -> SweepResult:
    """Start the engine once, run every rate of the plan against it, save and return the sweep."""
    import adapters
    from advisor.bench import BenchConfig, close, run_bench

    adapter = adapters.create(cfg.engine, cfg.model, **cfg.engine_options)
    adapter.start()
    try:
        def step(rate: float) -> dict[str, Any]:
            bc = BenchConfig(scenario=cfg.scenario, engine=cfg.engine, model=cfg.model,
                             overrides=replace(cfg.overrides, rate_rps=rate), engine_options=cfg.engine_options,
                             out_dir=cfg.out_dir, quiet=True)
            return run_bench(bc, adapter=adapter).to_dict()

        points, why = sweep_steps(cfg.rate_plan(), step, on_step)
    finally:
        close(adapter)
    sweep_id = f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-sweep-{cfg.scenario}-{cfg.engine}"
    res = SweepResult(sweep_id, cfg.scenario, cfg.engine, cfg.model, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      tuple(points), capacity_from_sweep(points), why)
    return replace(res, path=res.save(cfg.out_dir))
