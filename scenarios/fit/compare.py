"""How close a fitted scenario comes to its log: statistic by statistic, on a schedule generated from it.

The schedule is built as `bench` would at full scale (same builder, fixed
seed), but longer than the scenario's duration_s: at least 100,000 requests so the model's own noise is
small next to the log's, and at most 200,000 (a longer rate profile is then
compressed in time, which keeps its rates and so its gap distribution).
Lengths and gaps are compared by mean, median, p90, p99, CV and the
two-sample KS distance; also the rate, the length correlation, prefix
reuse and the rate curve over time. `series` holds compact curves for the
report's plots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scenarios.fit.collect import LogData
from scenarios.fit.stats import gap_sum_squares, ks_distance, sample_gaps, summarize
from scenarios.overrides import MAX_SECONDS
from scenarios.schedule import Overrides, build_schedule, resolve
from scenarios.spec import ProfileArrival, Scenario
from scenarios.types import PREFIX_BLOCK_TOKENS, Schedule

MIN_REQUESTS, MAX_REQUESTS = 100_000, 200_000
MAX_GAPS = 1_000_000
STATS = ("mean", "median", "p90", "p99", "cv")
QUANTILES = np.linspace(0.0, 1.0, 201)
SCATTER_POINTS = 3000
RATE_BINS = 120


@dataclass(frozen=True)
class StatRow:
    quantity: str
    stat: str
    log: float | None
    schedule: float
    kind: str  # "rel": relative difference; "abs": absolute difference (correlations); "ks": a distance

    @property
    def rel_diff(self) -> float | None:
        if self.kind != "rel" or self.log is None or self.log == 0:
            return None
        return (self.schedule - self.log) / abs(self.log)

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"quantity": self.quantity, "stat": self.stat, "log": self.log, "schedule": self.schedule,
                "rel_diff": self.rel_diff, "kind": self.kind}


@dataclass(frozen=True)
class Comparison:
    rows: list[StatRow]
    n_requests: int
    duration_s: float
    notes: tuple[str, ...]
    series: dict[str, Any]

    def row(self, quantity: str, stat: str) -> StatRow:
        return next(r for r in self.rows if r.quantity == quantity and r.stat == stat)


def comparison_schedule(scenario: Scenario, rate_rps: float, seed: int) -> Schedule:
    n_target = min(max(MIN_REQUESTS, int(scenario.duration_s * rate_rps)), MAX_REQUESTS)
    duration = n_target / rate_rps
    span = scenario.arrival.span_s if isinstance(scenario.arrival, ProfileArrival) else None
    if span is not None and span * rate_rps <= MAX_REQUESTS and duration < 2 * span:
        duration = span  # one whole cycle of the curve, uncompressed
    duration = min(duration, MAX_SECONDS)  # a very sparse log: the longest window a schedule may have
    return build_schedule(scenario, seed, Overrides(full_scale=True, warmup_s=0, duration_s=duration))


def _hit_ratio(n_in: np.ndarray, prefixes: list[tuple[int, ...]]) -> float:
    """Share of prompt tokens in leading whole blocks seen earlier (as the fit measures the log)."""
    seen: set[int] = set()
    hit = total = 0
    for a, p in zip(n_in.tolist(), prefixes):
        b = 0
        for h in p:
            if h not in seen:
                break
            b += 1
        hit += min(b, a // PREFIX_BLOCK_TOKENS) * PREFIX_BLOCK_TOKENS
        total += a
        seen.update(p)
    return hit / total if total else 0.0


def compare(data: LogData, scenario: Scenario, seed: int) -> Comparison:
    rate = (data.t_s.size - 1) / float(data.t_s[-1])
    sched = comparison_schedule(scenario, rate, seed)
    settings = resolve(scenario, Overrides(full_scale=True, warmup_s=0, duration_s=sched.duration_s), seed)
    t = np.array([r.t_sched_s for r in sched.requests])
    s_in = np.array([r.n_in for r in sched.requests], dtype=np.int64)
    s_out = np.array([r.n_out for r in sched.requests], dtype=np.int64)
    rng = np.random.default_rng(seed)
    log_gaps = sample_gaps(data.t_s, MAX_GAPS, rng)
    gen_gaps = np.diff(t)
    rows: list[StatRow] = []
    series: dict[str, Any] = {}
    for name, a, b in (("input tokens", data.pairs_in, s_in), ("output tokens", data.pairs_out, s_out),
                       ("gap between requests (s)", log_gaps, gen_gaps)):
        sa, sb = summarize(a), summarize(b)
        rows += [StatRow(name, st, sa.get(st), sb.get(st), "rel") for st in STATS]
        rows.append(StatRow(name, "KS distance", None, ks_distance(a, b), "ks"))
        series[name] = {"log": np.quantile(a, QUANTILES).tolist(), "schedule": np.quantile(b, QUANTILES).tolist()}
    series["quantiles"] = QUANTILES.tolist()
    rows.append(StatRow("requests", "rate (req/s)", rate, (t.size - 1) / float(t[-1] - t[0]), "rel"))
    rows.append(StatRow("requests", "gap CV", float(_cv(data.t_s)), float(gen_gaps.std() / gen_gaps.mean()), "rel"))
    corr_gen = float(np.corrcoef(s_in, s_out)[0, 1]) if np.ptp(s_in) and np.ptp(s_out) else 0.0
    rows.append(StatRow("lengths", "input/output correlation", data.lengths.corr, corr_gen, "abs"))
    if data.prefix is not None:
        rows.append(StatRow("prefix", "prefix cache hit ratio", data.prefix.hit_ratio,
                            _hit_ratio(s_in, [r.prefix_blocks for r in sched.requests]), "rel"))
    pick = rng.choice(len(data.pairs_in), size=min(SCATTER_POINTS, len(data.pairs_in)), replace=False)
    series["scatter"] = {"log": [data.pairs_in[pick].tolist(), data.pairs_out[pick].tolist()],
                         "schedule": [s_in[:SCATTER_POINTS].tolist(), s_out[:SCATTER_POINTS].tolist()]}
    series["rate"] = _rate_curves(data.t_s, t, scenario)
    if "rate_dev" in series["rate"]:
        rows.append(StatRow("rate curve", "mean abs. deviation", None, series["rate"]["rate_dev"], "ks"))
    return Comparison(rows, int(t.size), float(sched.duration_s), settings.notes, series)


def _cv(t: np.ndarray) -> float:
    n = t.size - 1
    mean = float(t[-1] - t[0]) / n
    return float(np.sqrt(max(gap_sum_squares(t) / n - mean * mean, 0.0)) / mean)


def _rate_curves(log_t: np.ndarray, gen_t: np.ndarray, scenario: Scenario) -> dict[str, Any]:
    """Request rate over the log's time line, for the log and the schedule (mapped back if compressed)."""
    span = float(log_t[-1])
    edges = np.linspace(0.0, span, RATE_BINS + 1)
    width = edges[1] - edges[0]
    log_rate = np.histogram(log_t, edges)[0] / width
    out: dict[str, Any] = {"t_s": ((edges[:-1] + edges[1:]) / 2).tolist(), "log": log_rate.tolist()}
    a = scenario.arrival
    if isinstance(a, ProfileArrival):
        gen_span = float(gen_t[-1]) if gen_t.size else 0.0
        factor = a.span_s / gen_span if gen_span < a.span_s else 1.0  # the run compressed the curve
        cycle = (gen_t * factor) % a.span_s
        n_cycles = max(gen_span * factor / a.span_s, 1e-9)
        gen_rate = np.histogram(cycle, edges)[0] * factor / width / n_cycles
        out["schedule"] = gen_rate.tolist()
        steps = np.minimum((edges[:-1] / a.step_s).astype(int), len(a.rates_rps) - 1)
        model = np.array(a.rates_rps)[steps]
        out["model"] = model.tolist()
        out["rate_dev"] = float(np.abs(gen_rate - log_rate).mean() / log_rate.mean())
    else:
        sel = gen_t[gen_t <= span]
        out["schedule"] = (np.histogram(sel, edges)[0] / width).tolist()
    return out
