"""SLO checks of saved runs: met, failed or not established (`advisor.metrics.support`'s rule).

A check needs the number of requests over each limit. Where the run folder still has its
per-request records (`requests.parquet`) the count is exact; otherwise it is an upper bound
read off the summary's percentiles (`n_over_bound`), which can only make a claim harder to
establish, never easier.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from advisor.loadgen.records import RequestRecord
from advisor.metrics.distribution import Distribution
from advisor.metrics.per_request import e2e_ms, tpot_ms, ttft_ms
from advisor.metrics.summary import RunSummary
from advisor.metrics.support import SloCheck, check_slo, count_over, n_over_bound
from advisor.saved.store import RunResult, StoreError

SLO_KEYS = ("ttft_ms", "tpot_ms", "e2e_ms")
_PER_REQUEST = {"ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "e2e_ms": e2e_ms}


@dataclass(frozen=True)
class RunSample:
    """Per successful measured request, the value of each SLO metric (None where undefined)."""

    values: dict[str, tuple[float, ...]]

    @classmethod
    def from_records(cls, records: Iterable[RequestRecord]) -> RunSample:
        ok = [r for r in records if not r.warmup and r.ok]  # the requests `summarize` puts in distributions
        return cls({k: tuple(v for r in ok if (v := fn(r)) is not None) for k, fn in _PER_REQUEST.items()})


def load_sample(run: RunResult) -> RunSample | None:
    """The run's per-request values from its records; None when the folder has none (checks then use bounds)."""
    if run.path is None:
        return None
    try:
        records = run.records()
    except (StoreError, OSError):
        return None
    measured = sum(1 for r in records if not r.warmup)
    if measured != run.summary.n_requests:
        return None  # records that are not this summary's (a hand-made or damaged folder): use the bounds
    return RunSample.from_records(records)


def load_samples(runs: Iterable[RunResult]) -> dict[str, RunSample]:
    """Samples by run id for every run whose records can be read."""
    return {r.run_id: s for r in runs if (s := load_sample(r)) is not None}


def observed(summary: RunSummary, metric: str, percentile: float) -> float | None:
    """The run's reported percentile of `metric` (None: not reported, too few requests)."""
    dist: Distribution = getattr(summary, metric)
    return dist.at(percentile)


def slo_check(run: RunResult, metric: str, limit_ms: float, percentile: float,
              sample: RunSample | None = None) -> SloCheck:
    """One SLO of one run: failed requests count as over the limit."""
    s = run.summary
    errors = s.n_errors
    dist: Distribution = getattr(s, metric)
    if sample is not None:
        values = sample.values.get(metric, ())
        n, over, exact = len(values) + errors, count_over(values, limit_ms) + errors, True
    else:
        n = dist.n + errors
        over, exact = n_over_bound(dist, limit_ms) + errors, False
    return check_slo(metric, percentile, limit_ms, n, over, observed(s, metric, percentile), n_over_exact=exact,
                     n_failed=errors)


def slo_checks(run: RunResult, slos: Mapping[str, float | None], percentile: float,
               sample: RunSample | None = None) -> dict[str, SloCheck]:
    """Every set limit of `slos` ({"ttft_ms": 800, ...}) checked against the run."""
    return {k: slo_check(run, k, float(lim), percentile, sample) for k in SLO_KEYS
            if (lim := slos.get(k)) is not None}


def run_slos(run: RunResult) -> tuple[dict[str, float | None], float]:
    """The run's own scenario SLOs and their percentile."""
    return {k: getattr(run.slos, k) for k in SLO_KEYS}, run.slos.percentile


def all_met(checks: Mapping[str, SloCheck]) -> bool:
    """True when every checked SLO is established as met (an unchecked one does not count)."""
    return all(c.met for c in checks.values())


def sample_for(run: RunResult, samples: Mapping[str, RunSample] | None) -> RunSample | None:
    return (samples or {}).get(run.run_id)
