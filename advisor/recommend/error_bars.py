"""Error bars for roofline estimates, from the estimator's own backtest per engine and device class.

For each (engine, device class) with at least two measured runs, every run is predicted from the
others of that engine and class (leave-one-out), and the largest miss sets the range: a factor
f = exp(max |ln(estimate / measured)|), separately for TTFT and TPOT, and an estimate v is reported
as [v / f, v x f]. With fewer runs there is no backtest for that engine and class, and the stated
default factor (2: half to twice the estimate) is used. An estimated row passes an SLO only when the
high end of its range does; its capacity range is [rate / f, rate x f] with the larger factor.
Calibration on runs from another device class (CPU runs carried to a GPU) gets the default factor
and is labelled uncalibrated for that class by the candidates, whatever its CPU backtest says.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from advisor.catalog.models import Hardware
from advisor.metrics.intervals import Interval
from advisor.roofline import ModelShape, Workload, calibrate, measured_s, predict
from advisor.store import RunResult

DEFAULT_ERROR_FACTOR = 2.0  # used where no backtest exists for the engine and device class: stated in every row
MIN_FACTOR = 1.05  # a perfect backtest on two runs says little: never narrower than +-5%


@dataclass(frozen=True)
class ErrorBar:
    ttft_factor: float
    tpot_factor: float
    basis: str  # where the factors came from, in words

    @property
    def rate_factor(self) -> float:
        return max(self.ttft_factor, self.tpot_factor)

    def factor(self, metric: str) -> float:
        return self.ttft_factor if metric == "ttft_ms" else self.tpot_factor if metric == "tpot_ms" \
            else self.rate_factor

    def range(self, metric: str, value: float) -> Interval:
        f = self.factor(metric)
        return Interval.from_range(value, value / f, value * f, f"x/÷{f:.2f}: {self.basis}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_bar(why: str) -> ErrorBar:
    return ErrorBar(DEFAULT_ERROR_FACTOR, DEFAULT_ERROR_FACTOR,
                    f"stated default x/÷{DEFAULT_ERROR_FACTOR:g} ({why})")


def _loo_errors(group: list[tuple[RunResult, Hardware]]) -> tuple[list[float], list[float]]:
    """|ln(estimate / measured)| of p50 TTFT and mean TPOT, each run predicted from the others."""
    ttft_err, tpot_err = [], []
    for i, (run, hw) in enumerate(group):
        others = group[:i] + group[i + 1:]
        eff = calibrate(others)
        shape, wl, s = ModelShape.from_engine(run.engine), Workload.from_summary(run.summary), run.summary
        ttft, tpot = measured_s(s.ttft_ms.at(50)), measured_s(s.tpot_ms.mean)
        if eff.basis.startswith("default") or shape is None or wl is None or not ttft or not tpot:
            continue
        if hw.peak_tflops(shape.dtype_bytes) is None:
            continue
        t = predict(shape, hw, wl, eff)
        ttft_err.append(abs(math.log(t.ttft_s / ttft)))
        tpot_err.append(abs(math.log(t.tpot_s / tpot)))
    return ttft_err, tpot_err


def error_bars(runs: list[tuple[RunResult, Hardware]],
               engine_of: Callable[[RunResult], str]) -> dict[tuple[str, str], ErrorBar]:
    """An ErrorBar per (engine, device class) that has a leave-one-out backtest; others are absent."""
    groups: dict[tuple[str, str], list[tuple[RunResult, Hardware]]] = defaultdict(list)
    for run, hw in runs:
        groups[(engine_of(run), hw.kind)].append((run, hw))
    out = {}
    for (engine, kind), group in groups.items():
        if len(group) < 2:
            continue
        te, pe = _loo_errors(group)
        if not te:
            continue
        out[(engine, kind)] = ErrorBar(max(MIN_FACTOR, math.exp(max(te))), max(MIN_FACTOR, math.exp(max(pe))),
                                       f"leave-one-out backtest of {engine} on {len(te)} {kind.upper()} run(s): "
                                       f"worst miss TTFT x{math.exp(max(te)):.2f}, TPOT x{math.exp(max(pe)):.2f}")
    return out
