"""The fit report: what was read, what was fitted and why, and the log-vs-schedule comparison.

One frozen object that the console, `--json` and the HTML page all render,
so the three never disagree. `to_dict()` is the JSON document (the plot
series stay out of it; they are only for the HTML page).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from scenarios.fit.compare import StatRow
from scenarios.fit.stats import Summary


@dataclass(frozen=True)
class LogSource:
    path: str
    layout: str  # "Azure CSV", "BurstGPT CSV", "Mooncake JSONL", "OpenAI-style JSONL", ...
    rows: int
    fields: dict[str, str]  # role -> field or column name used


@dataclass(frozen=True)
class FitReport:
    name: str
    sources: list[LogSource]
    n_requests: int
    span_s: float
    start_utc: str | None  # wall time of the log's first request, when its timestamps were absolute
    time_statement: str
    out_of_order: int
    no_usage: int
    zero_tokens: int
    skipped_model: int
    models: dict[str, int]
    arrival: dict[str, Any]  # the arrival block written
    arrival_why: str
    idle_threshold_s: float | None
    idle_gaps: int
    idle_share: float
    length_mode: str
    length_comment: str
    input_tokens: Summary
    output_tokens: Summary
    length_corr: float
    prefix: dict[str, Any] | None
    cached_ratio: float | None
    sessions: dict[str, Any] | None
    fit_block: dict[str, Any]
    comparison: list[StatRow]
    schedule_requests: int
    schedule_duration_s: float
    seed: int
    notes: list[str]
    outputs: dict[str, str]  # what -> path
    series: dict[str, Any] = field(default_factory=dict, repr=False)
    arrival_check: dict[str, Any] = field(default_factory=dict)  # the written arrivals drawn over seeds vs the log
    warnings: list[str] = field(default_factory=list)  # where the written scenario misses its log past a tolerance

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (--json output, never read back)
        d = {k: v for k, v in asdict(self).items() if k not in ("series", "comparison")}
        d["comparison"] = [r.to_dict() for r in self.comparison]
        return d

    def stat(self, quantity: str, stat: str) -> StatRow:
        return next(r for r in self.comparison if r.quantity == quantity and r.stat == stat)
