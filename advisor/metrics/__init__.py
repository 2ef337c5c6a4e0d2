"""Metrics: raw `RequestRecord`s -> `RunSummary` and a validity `Verdict`, per docs/metrics.md.

    summary = summarize(records, mode="open", slos=slos, window_ns=(w0, w1), offered_rps=2.0)
    v = verdict(summary, mode="open")

Memory, energy and cost are not computed here (telemetry and cost modules).
"""

from __future__ import annotations

from advisor.metrics.distribution import Distribution
from advisor.metrics.per_request import (
    client_queue_ms,
    e2e_ms,
    e2e_sched_ms,
    interactivity_tps,
    itl_ms,
    meets_slos,
    ntpot_ms,
    tpot_ms,
    tpot_n_minus_1_ms,
    ttft_ms,
    ttft_sched_ms,
)
from advisor.metrics.saturation import SaturationSignals
from advisor.metrics.summary import RunSummary, summarize
from advisor.metrics.verdict import Verdict, verdict

__all__ = [
    "Distribution",
    "RunSummary",
    "SaturationSignals",
    "Verdict",
    "client_queue_ms",
    "e2e_ms",
    "e2e_sched_ms",
    "interactivity_tps",
    "itl_ms",
    "meets_slos",
    "ntpot_ms",
    "summarize",
    "tpot_ms",
    "tpot_n_minus_1_ms",
    "ttft_ms",
    "ttft_sched_ms",
    "verdict",
]
