"""Service-level objectives: per-request latency limits at a percentile (the scenario YAML's `slos` block and
result.json's `slos` object).

Their own file, below the scenario schema (`scenarios.spec`) and the schedule types (`scenarios.types`,
which re-exports them), so that `scenarios.settings` can use the schema while `Schedule` names `Settings`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import ConfigDict

from fileform import FileForm

# The percentiles a run reports (advisor.metrics.distribution.PERCENTILES), so the ones an SLO can name
SLO_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0, 99.9)


def check_percentile(percentile: float) -> float:
    """`percentile` as a float when a run reports it; ValueError that lists the ones it does otherwise."""
    p = float(percentile)
    if p not in SLO_PERCENTILES:
        raise ValueError(f"SLO percentile {p:g} is not one advisor reports; use one of "
                         f"{', '.join(f'{q:g}' for q in SLO_PERCENTILES)}")
    return p


@dataclass(frozen=True, slots=True)
class SLOs(FileForm):
    """Per-request limits; a request is 'good' when it meets every limit that is set.

    The run meets its SLOs when the `percentile`-th percentile of each metric is
    within its limit (e.g. p95 TTFT <= ttft_ms). Also the scenario YAML's `slos` block
    (pydantic validates it through this class: unknown keys and non-finite numbers refused), and result.json's
    `slos` object (`FileForm`: a limit an older file lacks is unset, a missing percentile 95).
    """

    __pydantic_config__ = ConfigDict(extra="forbid", allow_inf_nan=False)

    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    percentile: float = 95.0

    def __post_init__(self) -> None:
        for name in ("ttft_ms", "tpot_ms", "e2e_ms"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
                                  or v <= 0):
                raise ValueError(f"SLO {name} must be a finite number > 0, got {v!r}")
        check_percentile(self.percentile)

    @property
    def any_limit(self) -> bool:
        """Whether any latency limit is set (without one there is no goodput or SLO verdict to report)."""
        return any(v is not None for v in (self.ttft_ms, self.tpot_ms, self.e2e_ms))
