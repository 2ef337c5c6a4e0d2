"""What a run and a sweep are asked to do: `BenchConfig` and `SweepConfig`, each field and default declared once.

The command line reads its flags' defaults here (`advisor_cli.options.default`), and each value is checked
here, once, with the flag's name in the message. Its own light file so that `advisor --help` imports no
engine, event loop or store code to show a default (`advisor.bench` and `advisor.sweep` import them from here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from adapters import BUILTIN_ENGINE
from advisor.loadgen import stall, worker_spec
from advisor.loadgen.worker_spec import Workers
from scenarios.overrides import Overrides
from scenarios.prompts import MAX_PROMPT_TOKENS

# Memory bounds (docs/metrics.md, "Memory bounds"): the longest request (prompt + output) advisor builds when the
# engine states no context length; --max-request-tokens raises it up to scenarios.prompts.MAX_PROMPT_TOKENS.
DEFAULT_MAX_REQUEST_TOKENS = 1_048_576
MAX_STEPS = 50  # steps of one sweep
MAX_REPEATS = 100  # runs of one cell (`--repeats`: bench, and per step of a sweep)


class BenchError(ValueError):
    """A benchmark that cannot run as asked; the message says what to change."""


class SweepError(ValueError):
    """A sweep that cannot run or be read; the message names the fix."""


@dataclass(frozen=True)
class BenchConfig:
    scenario: str
    engine: str = BUILTIN_ENGINE
    model: str | None = None
    overrides: Overrides = field(default_factory=Overrides)
    engine_options: dict[str, Any] = field(default_factory=dict)
    out_dir: Path = Path("runs")
    timeout_s: float = 600.0  # per request
    max_run_s: float | None = None  # whole run; None: the schedule's length plus drain time
    telemetry_interval_s: float = 1.0
    workers: Workers = "auto"  # load generators (advisor.loadgen.worker_spec): auto, N processes here, or ray:N actors
    auto_workers_cap: int | None = None  # `auto` uses at most this many (the CPUs a scheduler gave a matrix cell)
    ray_address: str | None = None  # the Ray cluster for `ray:N` (None: auto, advisor.ray_connect)
    max_request_tokens: int = DEFAULT_MAX_REQUEST_TOKENS  # the ceiling when the engine states no context
    server_hardware: dict[str, Any] | None = None  # a served engine's hardware (`--server-hardware`), into the manifest
    memory_budget_gb: float | None = None  # the most a run's plan may need (None: advisor.memory_budget's default)
    stall_every_s: float = stall.EVERY_S  # requests open and nothing arriving this long: a line on stderr (at most one per)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "workers", worker_spec.parse(self.workers))
        except worker_spec.WorkersError as e:
            raise BenchError(str(e)) from None
        cap = self.auto_workers_cap
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise BenchError(f"auto_workers_cap must be a whole number >= 1 or None, got {cap!r}")
        m = self.max_request_tokens
        if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= MAX_PROMPT_TOKENS:
            raise BenchError(f"--max-request-tokens must be a whole number from 1 to {MAX_PROMPT_TOKENS:,} (the most "
                             f"advisor holds in memory for one request), got {m!r}")
        b = self.memory_budget_gb
        if b is not None and (isinstance(b, bool) or not isinstance(b, int | float) or not math.isfinite(b) or b <= 0):
            raise BenchError(f"--memory-budget must be a finite number of GB > 0, got {b!r}")
        if self.ray_address is not None and worker_spec.on_ray(self.workers) is None:
            raise BenchError(f"--ray {self.ray_address}: the Ray cluster is for --workers ray:N; add it or drop --ray")
        for name in ("timeout_s", "max_run_s", "telemetry_interval_s", "stall_every_s"):
            v = getattr(self, name)
            if v is None and name == "max_run_s":
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
                flag = {"timeout_s": "--timeout"}.get(name, name)
                raise BenchError(f"{flag} must be a finite number of seconds > 0, got {v!r}")


@dataclass(frozen=True)
class SweepConfig:
    bench: BenchConfig  # engine, scenario, model, options and overrides of every step
    rates: tuple[float, ...] | None = None  # explicit rates, else start x factor^i
    concurrencies: tuple[int, ...] | None = None  # closed-loop users instead of rates
    start_rps: float = 0.5
    factor: float = 2.0
    max_steps: int = 6
    repeats: int = 1  # runs per step, grouped (advisor.repeats)
    restart_engine: bool = False  # a fresh engine for every repeat

    def __post_init__(self) -> None:
        if not 1 <= self.repeats <= MAX_REPEATS:
            raise SweepError(f"--repeats must be 1 to {MAX_REPEATS}, got {self.repeats}")
        if self.rates is not None and self.concurrencies is not None:
            raise SweepError("give --rates or --concurrencies, not both")
        if self.rates is not None and (not self.rates or any(not 0 < r < float("inf") for r in self.rates)):
            raise SweepError(f"--rates must be positive numbers, e.g. 0.5,1,2,4; got {self.rates}")
        if self.concurrencies is not None and (not self.concurrencies or any(
                isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in self.concurrencies)):
            raise SweepError(f"--concurrencies must be whole numbers >= 1, e.g. 1,2,4,8; got {self.concurrencies}")
        if not (0 < self.start_rps < float("inf")) or not (1 < self.factor < float("inf")) \
                or not 1 <= self.max_steps <= MAX_STEPS:
            raise SweepError(f"need --start > 0, --factor > 1 and 1 <= --max-steps <= {MAX_STEPS}; got "
                             f"{self.start_rps}, {self.factor}, {self.max_steps}")
        if len(self.load_plan()) > MAX_STEPS:
            raise SweepError(f"at most {MAX_STEPS} steps per sweep; got {len(self.load_plan())}")

    @property
    def unit(self) -> Literal["rps", "users"]:
        return "users" if self.concurrencies is not None else "rps"

    def load_plan(self) -> list[float]:
        if self.concurrencies is not None:
            return [float(c) for c in sorted(set(self.concurrencies))]
        if self.rates is not None:
            return sorted(set(self.rates))
        return [round(self.start_rps * self.factor ** i, 6) for i in range(self.max_steps)]

    def step_config(self, load: float) -> BenchConfig:
        ov = (replace(self.bench.overrides, concurrency=int(load)) if self.unit == "users"
              else replace(self.bench.overrides, rate_rps=load))
        return replace(self.bench, overrides=ov)

    def to_dict(self) -> dict[str, Any]:
        b = self.bench
        return {"scenario": b.scenario, "engine": b.engine, "model": b.model, "overrides": b.overrides.as_dict(),
                "engine_options": dict(b.engine_options), "out_dir": str(b.out_dir), "timeout_s": b.timeout_s,
                "workers": b.workers, "rates": list(self.rates) if self.rates is not None else None,
                "concurrencies": list(self.concurrencies) if self.concurrencies is not None else None,
                "start_rps": self.start_rps, "factor": self.factor, "max_steps": self.max_steps,
                "repeats": self.repeats, "restart_engine": self.restart_engine}

    @classmethod
    def from_dict(cls, d: dict[str, Any], out_dir: Path) -> SweepConfig:
        """A saved sweep's settings (sweep.json's `config`); a key an older file lacks takes the default above."""
        given = {k: conv(d[k]) for k, conv in (("timeout_s", float), ("workers", _same)) if k in d}
        bench = BenchConfig(scenario=d["scenario"], engine=d["engine"], model=d.get("model"),
                            overrides=Overrides(**d.get("overrides", {})), engine_options=d.get("engine_options", {}),
                            out_dir=out_dir, **given)  # a resumed sweep keeps its load-generator workers
        steps = {k: conv(d[k]) for k, conv in (("start_rps", _same), ("factor", _same), ("max_steps", _same),
                                                ("repeats", int), ("restart_engine", bool)) if k in d}
        return cls(bench, rates=tuple(d["rates"]) if d.get("rates") is not None else None,
                   concurrencies=tuple(d["concurrencies"]) if d.get("concurrencies") is not None else None, **steps)


def _same(value: Any) -> Any:
    return value
