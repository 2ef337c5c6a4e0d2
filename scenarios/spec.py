"""The scenario YAML as a strict pydantic model: unknown keys are errors.

A scenario is workload (length distributions or a trace), arrival process,
duration and warm-up, SLOs, a description of the real use it stands for, and
a `fit` block that shrinks it to the embedded default machine. This module
only validates; `scenarios.schedule` turns a Scenario into a Schedule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from scenarios.types import SLOs

Pos = Annotated[float, Field(gt=0)]
NonNeg = Annotated[float, Field(ge=0)]
Tokens = Annotated[int, Field(ge=1, le=10_000_000)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TraceRef(_Strict):
    """A trace file: an absolute path, or a name found via $ADVISOR_TRACES or beside the YAML."""

    file: str = Field(min_length=1)
    format: Literal["azure", "mooncake"] | None = None  # default: from the extension (.csv / .jsonl)


# ---- token lengths ----------------------------------------------------------------------------

class FixedLen(_Strict):
    dist: Literal["fixed"]
    value: Tokens


class UniformLen(_Strict):
    dist: Literal["uniform"]
    min: Tokens
    max: Tokens

    @model_validator(mode="after")
    def _order(self) -> UniformLen:
        if self.min > self.max:
            raise ValueError(f"uniform needs min <= max, got min={self.min}, max={self.max}")
        return self


class LognormalLen(_Strict):
    """Lognormal with this median whose mean, after clipping to [min, max], is `mean`."""

    dist: Literal["lognormal"]
    mean: Pos
    median: Pos
    min: Tokens = 1
    max: Tokens | None = None

    @model_validator(mode="after")
    def _order(self) -> LognormalLen:
        if self.mean < self.median:
            raise ValueError(f"lognormal needs mean >= median, got mean={self.mean}, median={self.median}")
        hi = self.max if self.max is not None else float("inf")
        if not self.min <= self.median <= hi:
            raise ValueError(f"lognormal needs min <= median <= max, got {self.min} <= {self.median} <= {self.max}")
        return self


class EmpiricalLen(_Strict):
    """Resample the matching column (input or output length) of a trace."""

    dist: Literal["empirical"]
    trace: TraceRef


LengthSpec = Annotated[FixedLen | UniformLen | LognormalLen | EmpiricalLen, Field(discriminator="dist")]


class Workload(_Strict):
    """Either `input` and `output` length distributions, or a `trace` (lengths and prefixes row by row)."""

    input: LengthSpec | None = None
    output: LengthSpec | None = None
    trace: TraceRef | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Workload:
        has_dists = self.input is not None or self.output is not None
        if self.trace is not None and has_dists:
            raise ValueError("give either `trace` or `input`/`output` distributions, not both")
        if self.trace is None and (self.input is None or self.output is None):
            raise ValueError("give both `input` and `output` length distributions, or a `trace`")
        return self


# ---- arrival processes ------------------------------------------------------------------------

class ConstantArrival(_Strict):
    process: Literal["constant"]
    rate_rps: Pos


class PoissonArrival(_Strict):
    process: Literal["poisson"]
    rate_rps: Pos


class GammaArrival(_Strict):
    process: Literal["gamma"]
    rate_rps: Pos
    cv: Annotated[float, Field(ge=0, le=100)]  # inter-arrival coefficient of variation; 1 = Poisson


class OnOffArrival(_Strict):
    process: Literal["onoff"]
    on_rate_rps: Pos  # rate inside a burst
    on_cv: Annotated[float, Field(ge=0, le=100)] = 1.0  # gap CV inside a burst
    on_s: Pos  # mean burst length
    off_s: NonNeg  # mean idle length
    phase_cv: Annotated[float, Field(ge=0, le=10)] = 0.3  # CV of burst and idle lengths


class ClosedArrival(_Strict):
    process: Literal["closed"]
    concurrency: Annotated[int, Field(ge=1, le=100_000)]
    think_s: NonNeg  # mean pause between a user's answer and its next request
    think_cv: Annotated[float, Field(ge=0, le=10)] = 1.0
    requests_per_user: Annotated[int, Field(ge=1)]  # at the scenario's warmup_s + duration_s


class OfflineArrival(_Strict):
    process: Literal["offline"]
    requests: Annotated[int, Field(ge=1, le=10_000_000)]


class TraceArrival(_Strict):
    """Replay the workload trace's own timestamps."""

    process: Literal["trace"]
    speed: Pos = 1.0  # > 1 replays faster
    start_s: NonNeg = 0.0  # skip this much of the trace


ArrivalSpec = Annotated[ConstantArrival | PoissonArrival | GammaArrival | OnOffArrival | ClosedArrival
                        | OfflineArrival | TraceArrival, Field(discriminator="process")]


# ---- SLOs, fit, scenario ------------------------------------------------------------------------

class SLOSpec(_Strict):
    ttft_ms: Pos | None = None
    tpot_ms: Pos | None = None
    e2e_ms: Pos | None = None
    percentile: Annotated[float, Field(gt=0, le=100)] = 95.0

    def to_slos(self) -> SLOs:
        return SLOs(self.ttft_ms, self.tpot_ms, self.e2e_ms, self.percentile)


class Fit(_Strict):
    """Defaults that fit the scenario to the embedded default machine (2-core CPU, `tiny` model).

    Same meaning as the CLI overrides; `arrival` replaces the arrival process
    (e.g. drop minute-long idle gaps that a short run cannot show).
    """

    rate_rps: Pos | None = None
    duration_s: Pos | None = None
    warmup_s: NonNeg | None = None
    concurrency: Annotated[int, Field(ge=1)] | None = None
    max_requests: Annotated[int, Field(ge=1)] | None = None
    length_scale: Pos | None = None
    max_input_tokens: Tokens | None = None
    max_output_tokens: Tokens | None = None
    arrival: ArrivalSpec | None = None


class Scenario(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    description: str = Field(min_length=20)  # one paragraph: the real use it stands for
    source: str = ""  # credit for the data it was calibrated on
    workload: Workload
    arrival: ArrivalSpec
    duration_s: NonNeg = 60.0  # measurement window (open and closed loop); offline: unused
    warmup_s: NonNeg = 0.0
    slos: SLOSpec = SLOSpec()
    fit: Fit = Fit()
    _base_dir: Path | None = PrivateAttr(default=None)  # folder of the YAML, for relative trace files

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        arrivals = [self.arrival] + ([self.fit.arrival] if self.fit.arrival is not None else [])
        for a in arrivals:
            if isinstance(a, TraceArrival) and self.workload.trace is None:
                raise ValueError("arrival `process: trace` replays the workload trace: add `workload.trace`")
        if not isinstance(self.arrival, OfflineArrival | ClosedArrival) and self.duration_s <= 0:
            raise ValueError(f"duration_s must be > 0 for an open-loop scenario, got {self.duration_s}")
        return self

    @property
    def base_dir(self) -> Path | None:
        return self._base_dir

    def with_base_dir(self, base_dir: Path | None) -> Scenario:
        """A copy that resolves relative trace files against `base_dir`."""
        s = self.model_copy()
        s._base_dir = base_dir
        return s
