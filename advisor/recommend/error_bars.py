"""The estimator's backtest and the error bars it gives, as one computation on one set of runs.

Which runs count: only runs that say something about the device's latency calibrate the roofline
or serve as backtest targets: VALID (a SATURATED run tells capacity, not latency), on catalog
hardware with peaks, with a model shape, and device-bound or CPU (`bound.py`: a host-bound run
measured the engine's host path, not the device). Every other run is listed with why it was left
out. Runs are grouped by (engine, device class, model shape): an efficiency measured on one model
says nothing about another's (a tiny model is overhead-bound where a large one is bandwidth-bound),
so a run of another model never calibrates an estimate. In a group of at least two such runs, every run is
predicted from the others (leave-one-out); those rows are the printed backtest, and the largest
miss sets that group's error bar: f = exp(max |ln(estimate / measured)|), separately for TTFT and
TPOT, an estimate v reported as [v / f, v x f] (never narrower than MIN_FACTOR). The same group's
runs calibrate the estimates that carry that bar. With fewer than two such runs there is no
backtest, the estimate is not "calibrated", and the stated default factor is used and said.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.catalog.models import Hardware
from advisor.metrics.intervals import Interval
from advisor.recommend.bound import classify
from advisor.saved.store import RunResult
from advisor.sizing.roofline import BacktestRow, ModelShape, Workload, calibrate, measured_s, predict
from fileform import FileForm

if TYPE_CHECKING:
    from advisor.recommend.candidates import MeasuredRun

DEFAULT_ERROR_FACTOR = 2.0  # used where no backtest exists for the engine and device class: stated in every row
MIN_FACTOR = 1.05  # a perfect backtest on two runs says little: never narrower than +-5%
MIN_BACKTEST_RUNS = 2


@dataclass(frozen=True)
class ErrorBar(FileForm):
    ttft_factor: float
    tpot_factor: float
    basis: str  # where the factors came from, in words
    from_backtest: bool = False

    @property
    def rate_factor(self) -> float:
        return max(self.ttft_factor, self.tpot_factor)

    def factor(self, metric: str) -> float:
        return self.ttft_factor if metric == "ttft_ms" else self.tpot_factor if metric == "tpot_ms" \
            else self.rate_factor

    def range(self, metric: str, value: float) -> Interval:
        f = self.factor(metric)
        return Interval.from_range(value, value / f, value * f, f"x/÷{f:.2f}: {self.basis}")


def default_bar(why: str) -> ErrorBar:
    return ErrorBar(DEFAULT_ERROR_FACTOR, DEFAULT_ERROR_FACTOR,
                    f"stated default x/÷{DEFAULT_ERROR_FACTOR:g} ({why})")


def ineligible(mr: MeasuredRun) -> str | None:
    """Why a run may not calibrate the roofline or be a backtest target (None: it may)."""
    run, hw = mr.run, mr.hardware
    if hw is None or hw.peak_tflops(2) is None and hw.peak_tflops(4) is None:
        return "its hardware has no catalog peaks"
    if run.verdict.status != "VALID":
        return (f"{run.verdict.status}: it tells capacity, not latency" if run.verdict.status == "SATURATED"
                else f"verdict {run.verdict.status}")
    if ModelShape.from_engine(run.engine) is None or Workload.from_summary(run.summary) is None:
        return "no model shape or no completed requests"
    b = classify(run, hw)
    if not b.calibrates_device:
        return b.reason
    return None


PoolKey = tuple[str, str, ModelShape]  # (engine, device class, model shape)


@dataclass(frozen=True)
class BacktestGroup(FileForm):
    engine: str
    device_class: str
    run_ids: tuple[str, ...]
    rows: tuple[BacktestRow, ...]  # leave-one-out, one per run
    bar: ErrorBar
    model: str = ""  # the model shape in words (ModelShape.label)


@dataclass(frozen=True)
class EstimatorBacktest:
    """Every backtest group, the runs each engine, class and model may calibrate on, and the runs left out and why."""

    groups: tuple[BacktestGroup, ...]
    pools: dict[PoolKey, list[tuple[RunResult, Hardware]]]  # -> eligible runs
    left_out: tuple[str, ...]  # "run X: why"
    bars: dict[PoolKey, ErrorBar] = field(default_factory=dict)

    @property
    def rows(self) -> tuple[BacktestRow, ...]:
        return tuple(r for g in self.groups for r in g.rows)

    @property
    def ttft_mape(self) -> float | None:
        return statistics.mean(abs(r.ttft_error) for r in self.rows) if self.rows else None

    @property
    def tpot_mape(self) -> float | None:
        return statistics.mean(abs(r.tpot_error) for r in self.rows) if self.rows else None

    def bar(self, engine: str, kind: str, shape: ModelShape) -> ErrorBar | None:
        return self.bars.get((engine, kind, shape))

    def pool(self, engine: str, kind: str, shape: ModelShape) -> list[tuple[RunResult, Hardware]]:
        return self.pools.get((engine, kind, shape), [])

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"groups": [g.to_dict() for g in self.groups], "rows": [r.to_dict() for r in self.rows],
                "ttft_mape": self.ttft_mape, "tpot_mape": self.tpot_mape, "left_out": list(self.left_out)}


def _loo(group: list[tuple[RunResult, Hardware]]) -> list[BacktestRow]:
    rows = []
    for i, (run, hw) in enumerate(group):
        eff = calibrate(group[:i] + group[i + 1:])
        shape, wl, s = ModelShape.from_engine(run.engine), Workload.from_summary(run.summary), run.summary
        ttft, tpot = measured_s(s.ttft_ms.at(50)), measured_s(s.tpot_ms.mean)
        if eff is None or shape is None or wl is None or not ttft or not tpot:
            continue
        t = predict(shape, hw, wl, eff)
        rows.append(BacktestRow(run.run_id, hw.id, ttft * 1e3, t.ttft_s * 1e3, tpot * 1e3, t.tpot_s * 1e3,
                                "leave-one-out"))
    return rows


def miss_factor(rows: tuple[BacktestRow, ...] | list[BacktestRow], metric: str) -> float:
    """exp(max |ln(estimate / measured)|) over backtest rows: the worst miss as a factor."""
    errs = [r.ttft_error if metric == "ttft_ms" else r.tpot_error for r in rows]
    return math.exp(max(abs(math.log1p(e)) for e in errs))


def estimator_backtest(runs: list[MeasuredRun], engine_of: Callable[[RunResult], str]) -> EstimatorBacktest:
    """The backtest per (engine, device class, model shape) over the eligible runs, and the error bar each gives."""
    pools: dict[PoolKey, list[tuple[RunResult, Hardware]]] = defaultdict(list)
    left = []
    for mr in runs:
        why = ineligible(mr)
        if why is not None:
            left.append(f"run {mr.run.run_id}: {why}")
            continue
        assert mr.hardware is not None
        shape = ModelShape.from_engine(mr.run.engine)
        assert shape is not None  # ineligible() checked it
        pools[(engine_of(mr.run), mr.hardware.kind, shape)].append((mr.run, mr.hardware))
    groups, bars = [], {}
    for (engine, kind, shape), group in pools.items():
        if len(group) < MIN_BACKTEST_RUNS:
            continue
        rows = _loo(group)
        if len(rows) < MIN_BACKTEST_RUNS:
            continue
        ft, fp = miss_factor(rows, "ttft_ms"), miss_factor(rows, "tpot_ms")
        bar = ErrorBar(max(MIN_FACTOR, ft), max(MIN_FACTOR, fp),
                       f"leave-one-out backtest of {engine} on {len(rows)} {kind.upper()} run(s) of {shape.label}: worst miss "
                       f"TTFT x{ft:.2f}, TPOT x{fp:.2f}", from_backtest=True)
        bars[(engine, kind, shape)] = bar
        groups.append(BacktestGroup(engine, kind, tuple(r.run_id for r in rows), tuple(rows), bar, shape.label))
    return EstimatorBacktest(tuple(groups), dict(pools), tuple(left), bars)
