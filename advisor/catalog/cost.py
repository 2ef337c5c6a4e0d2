"""Cost per 1M tokens, replicas for a peak load, and monthly cost (docs/metrics.md, "Cost").

    $/1M tokens = (instance $/hour x instances) / (tokens/s x 3600) x 1e6

Four figures per throughput: output-only, input-only and total tokens (all of the
hourly cost charged to that token kind), and a blended figure comparable with
hosted-API "blended" prices: the hourly cost is split between input and output tokens
with an output token weighted `OUTPUT_TOKEN_WEIGHT` (4x, the typical hosted-API
output:input price ratio) times an input token, then blended 3:1 input:output.
A month is 730 hours (8760 / 12).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.metrics.summary import RunSummary
from fileform import FileForm

HOURS_PER_MONTH = 730.0
BLEND_INPUT_PER_OUTPUT = 3.0  # the 3:1 input:output convention for blended prices
OUTPUT_TOKEN_WEIGHT = 4.0  # an output token costs this many input tokens when splitting the hourly cost
DEFAULT_HEADROOM = 0.2


def usd_per_million_tokens(usd_per_hour: float, instances: float, tokens_per_s: float) -> float | None:
    """The docs/metrics.md formula; None when nothing was produced (cost per token undefined)."""
    assert usd_per_hour >= 0 and instances > 0
    if tokens_per_s <= 0:
        return None
    return usd_per_hour * instances / (tokens_per_s * 3600.0) * 1e6


@dataclass(frozen=True)
class CostPerMillion(FileForm):
    """USD per 1M tokens at one throughput; None where that token kind had zero throughput."""

    output_usd: float | None
    input_usd: float | None
    total_usd: float | None
    blended_usd: float | None  # 3:1 input:output, output weighted 4x (see module doc)
    input_tokens_per_s: float
    output_tokens_per_s: float


def cost_per_million(usd_per_hour: float, instances: float, input_tokens_per_s: float,
                     output_tokens_per_s: float) -> CostPerMillion:
    """All four $/1M figures for one instance price and throughput."""
    blended = None
    weighted_tps = input_tokens_per_s + OUTPUT_TOKEN_WEIGHT * output_tokens_per_s
    if weighted_tps > 0:
        usd_per_input_token = usd_per_hour * instances / 3600.0 / weighted_tps
        w = BLEND_INPUT_PER_OUTPUT
        blended = usd_per_input_token * (w + OUTPUT_TOKEN_WEIGHT) / (w + 1.0) * 1e6
    return CostPerMillion(
        output_usd=usd_per_million_tokens(usd_per_hour, instances, output_tokens_per_s),
        input_usd=usd_per_million_tokens(usd_per_hour, instances, input_tokens_per_s),
        total_usd=usd_per_million_tokens(usd_per_hour, instances, input_tokens_per_s + output_tokens_per_s),
        blended_usd=blended,
        input_tokens_per_s=input_tokens_per_s,
        output_tokens_per_s=output_tokens_per_s,
    )


@dataclass(frozen=True)
class RunCost(FileForm):
    """A run's cost per 1M tokens at its measured throughput and at its SLO operating point."""

    usd_per_hour: float
    instances: float
    measured: CostPerMillion
    at_slo: CostPerMillion | None  # at goodput (or sweep capacity); None if no request met the SLOs
    slo_rps: float | None  # the request rate used for at_slo
    slo_basis: str  # "capacity" (from a sweep), "goodput" (this run), or why there is none


def tokens_per_request(summary: RunSummary) -> tuple[float, float]:
    """Mean (input, output) tokens of the run's successful measured requests; (0, 0) if none succeeded.

    The one definition of "the measured tokens per request" that the SLO point keeps: the run's cost table
    and the recommender's ranking both use it, so one run shows one $/1M at its SLO point."""
    n = summary.n_ok
    if n <= 0:
        return 0.0, 0.0
    return float(summary.n_in_total) / n, float(summary.n_out_total) / n


def run_cost(summary: RunSummary, usd_per_hour: float, instances: float = 1.0,
             capacity_rps: float | None = None) -> RunCost:
    """Cost of one run from its summary; the SLO point is the sweep capacity if given, else goodput."""
    in_tps = float(summary.input_tokens_per_s or 0.0)
    out_tps = float(summary.output_tokens_per_s or 0.0)
    measured = cost_per_million(usd_per_hour, instances, in_tps, out_tps)
    if capacity_rps is not None:
        slo_rps, basis = capacity_rps, "capacity"
    elif summary.goodput_rps:  # never above throughput, also for older runs (RunSummary.upgrade)
        slo_rps, basis = float(summary.goodput_rps), "goodput"
    else:
        return RunCost(usd_per_hour, instances, measured, None, None, "no request met every SLO")
    n_in, n_out = tokens_per_request(summary)
    if n_in + n_out <= 0:
        return RunCost(usd_per_hour, instances, measured, None, None, "no completed requests")
    # tokens per request stay as measured; only the request rate moves to the SLO point
    at_slo = cost_per_million(usd_per_hour, instances, slo_rps * n_in, slo_rps * n_out)
    return RunCost(usd_per_hour, instances, measured, at_slo, slo_rps, basis)


def replicas_needed(peak_rps: float, capacity_rps_per_replica: float, headroom: float = DEFAULT_HEADROOM) -> int:
    """ceil(peak x (1 + headroom) / capacity per replica), at least 1."""
    if peak_rps < 0 or headroom < 0:
        raise ValueError(f"peak_rps and headroom must be >= 0, got {peak_rps}, {headroom}")
    if capacity_rps_per_replica <= 0:
        raise ValueError(f"capacity per replica must be > 0, got {capacity_rps_per_replica}")
    # round before ceil so 10.000000001 from float noise does not buy an extra replica
    return max(1, math.ceil(round(peak_rps * (1.0 + headroom) / capacity_rps_per_replica, 9)))


def monthly_cost_usd(usd_per_hour: float, devices_per_replica: float, replicas: int) -> float:
    """Always-on cost of `replicas` replicas for a 730-hour month."""
    return usd_per_hour * devices_per_replica * replicas * HOURS_PER_MONTH
