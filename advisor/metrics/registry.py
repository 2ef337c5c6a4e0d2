"""Every per-request metric, collected from `advisor/metrics/defs/` (one module per metric, each a `Metric`).

The summary computes a distribution per entry and result.json's summary holds it under the metric's key; the
console's latency table, `compare` and the repeat groups (`advisor.repeats.group.FIGURES`, from each metric's
`percentiles`), the report's tables and definitions and the dashboard's columns and charts all read this list,
in `order`. A new metric is one module in defs/ (docs/metrics.md defines it); nothing else names it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Protocol

from advisor.metrics import defs
from advisor.metrics.metric import Better, Metric


def _collect() -> tuple[Metric, ...]:
    found = []
    for mod in pkgutil.iter_modules(defs.__path__):
        metric = importlib.import_module(f"{defs.__name__}.{mod.name}").METRIC
        assert isinstance(metric, Metric) and metric.key == mod.name, f"defs/{mod.name}.py must define METRIC keyed {mod.name!r}"
        found.append(metric)
    assert len({m.order for m in found}) == len(found), "two metrics share an order"
    return tuple(sorted(found, key=lambda m: m.order))


METRICS: tuple[Metric, ...] = _collect()
METRIC_BY_KEY = {m.key: m for m in METRICS}
HEADLINE: tuple[Metric, ...] = tuple(m for m in METRICS if m.headline is not None)  # the short views' metrics



class _Summary(Protocol):
    def recorded(self, key: str) -> object: ...


def not_recorded(summaries: Iterable[_Summary], key: str) -> bool:
    """`key` is a registered metric that none of these run summaries recorded (saved before it existed): tables
    say "not recorded" rather than show an empty or zero figure."""
    return key in METRIC_BY_KEY and all(s.recorded(key) is None for s in summaries)


__all__ = ["HEADLINE", "METRICS", "METRIC_BY_KEY", "Better", "Metric", "not_recorded"]
