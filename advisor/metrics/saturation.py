"""Facts about whether the engine kept up with the offered load, for the verdict.

A saturated open-loop run has a queue that grows for as long as the run lasts:
fewer requests complete per second than arrive, requests scheduled late in the
window wait longer before their first token than early ones, and some are still
unfinished when the run stops. This module measures those three things; the
verdict (`advisor.metrics.verdict`) decides what they mean.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.loadgen.records import RequestRecord
from advisor.metrics.per_request import completion_ns, ttft_sched_ms
from advisor.metrics.throughput import completed_in
from fileform import FileForm

MIN_PER_THIRD = 5  # fewer requests than this in a third of the window: no trend reported
UNFINISHED_KINDS = ("cancelled",)  # the run stopped before the request finished


@dataclass(frozen=True, slots=True)
class SaturationSignals(FileForm):
    arrival_rps: float | None  # measured requests scheduled inside the window / window length
    completed_rps: float | None  # requests (warm-up included) that finished inside the window / window length
    ttft_sched_p50_first_third_ms: float | None  # median TTFT_sched of requests scheduled in the window's first third
    ttft_sched_p50_last_third_ms: float | None  # ... and in its last third
    n_unfinished: int  # measured requests cancelled at the end of the run or never sent
    ended_rps: float | None = None  # requests that ended inside the window, failed ones too (not cancelled) / window

    @classmethod
    def upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        """A run from before `ended_rps` counted only completions: that is what it ended with."""
        return d if "ended_rps" in d else {**d, "ended_rps": d.get("completed_rps")}


def _median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if len(values) >= MIN_PER_THIRD else None


def saturation_signals(records: Sequence[RequestRecord], measured: Sequence[RequestRecord],
                       window: tuple[int, int] | None) -> SaturationSignals:
    """Measure arrival vs completion rate, the TTFT_sched trend and unfinished requests."""
    n_unfinished = sum(1 for r in measured if r.t_send_ns is None or r.error_kind in UNFINISHED_KINDS)
    if window is None:
        return SaturationSignals(None, None, None, None, n_unfinished, None)
    start, end = window
    window_s = (end - start) / 1e9
    arrivals = sum(1 for r in measured if start <= r.t_sched_ns <= end)
    third = (end - start) / 3
    first: list[float] = []
    last: list[float] = []
    for r in measured:
        v = ttft_sched_ms(r) if r.ok else None
        if v is None:
            continue
        if start <= r.t_sched_ns < start + third:
            first.append(v)
        elif end - third <= r.t_sched_ns <= end:
            last.append(v)
    return SaturationSignals(
        arrival_rps=arrivals / window_s,
        completed_rps=completed_in(records, window) / window_s,
        ttft_sched_p50_first_third_ms=_median_or_none(first),
        ttft_sched_p50_last_third_ms=_median_or_none(last),
        n_unfinished=n_unfinished,
        ended_rps=ended_in(records, window) / window_s,
    )


def ended_in(records: Sequence[RequestRecord], window: tuple[int, int]) -> int:
    """Requests that ended inside the window, succeeded or failed; cancelled ones had not ended."""
    start, end = window
    return sum(1 for r in records if r.error_kind not in UNFINISHED_KINDS
               and (t := r.t_end_ns if r.t_end_ns is not None else completion_ns(r)) is not None and start <= t <= end)
