"""What a run's telemetry came to: result.json's `telemetry` object, typed.

`Telemetry.summary()` computes it; its file form follows from the fields (fileform: a key an older
run lacks reads as None or empty). The GPU summary, the server's Prometheus snapshots and the
raw samples stay plain JSON objects: their keys are the sampler's (NVML, the server's own metric
names), not advisor's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fileform import FileForm


@dataclass(frozen=True)
class TelemetrySummary(FileForm):
    interval_s: float | None = None
    pid: int | None = None  # the engine process sampled; None: a remote server
    rss_absent_reason: str | None = None
    rss_peak_mb: float | None = None
    rss_steady_mb: float | None = None  # median over the window
    cpu_percent_mean: float | None = None
    gpu: dict[str, Any] | None = None  # advisor.telemetry.gpu's summary; None: no GPU sampled
    gpu_absent_reason: str | None = None
    engine_stats: dict[str, float] = field(default_factory=dict)  # peaks of the engine's own gauges
    server_metrics: dict[str, Any] | None = None  # Prometheus snapshots (advisor.telemetry.prometheus)
    samples: list[dict[str, Any]] = field(default_factory=list)
