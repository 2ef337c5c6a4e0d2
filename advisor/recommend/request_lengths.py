"""The request lengths a model config is sized at: the measured runs' when there are any, else the scenario's.

Measured runs of the same model (their mean tokens per request) come first, so that estimated and measured
rows are sized for one workload; without them, the scenario's mean input and output tokens at full scale
(its `fit` block ignored): the stated mean of a lognormal, the value of a fixed length, the midpoint of a
uniform one, and for traces, pairs and sessions the mean of its full-scale schedule (seed 0).
"""

from __future__ import annotations

import statistics

from advisor.catalog.cost import tokens_per_request
from advisor.saved.store import RunResult
from scenarios import spec as S
from scenarios.overrides import Overrides
from scenarios.schedule import build_schedule


def _stated_mean(d: S.LengthSpec | None) -> float | None:
    if isinstance(d, S.LognormalLen):
        return float(d.mean)
    if isinstance(d, S.FixedLen):
        return float(d.value)
    if isinstance(d, S.UniformLen):
        return (d.min + d.max) / 2.0
    return None


def request_lengths(scenario: S.Scenario, runs: list[RunResult]) -> tuple[int, int, str]:
    """(input tokens, output tokens, where they come from) of the typical request to size."""
    measured = [tokens_per_request(r.summary) for r in runs if r.summary.n_ok > 0]
    if measured:
        n_in = statistics.mean(x for x, _ in measured)
        n_out = statistics.mean(y for _, y in measured)
        return (max(1, round(n_in)), max(1, round(n_out)),
                f"request lengths: {n_in:.0f} input and {n_out:.0f} output tokens, the mean of the {len(measured)} "
                f"measured run(s) of this model on scenario {scenario.name!r} (so measured and estimated rows size "
                "one workload)")
    wl = scenario.workload
    n_in, n_out = _stated_mean(wl.input), _stated_mean(wl.output)
    how = "its stated means"
    if n_in is None or n_out is None:
        reqs = build_schedule(scenario, 0, Overrides(full_scale=True)).requests
        n_in = statistics.mean(r.n_in for r in reqs) if reqs else 1.0
        n_out = statistics.mean(r.n_out for r in reqs) if reqs else 1.0
        how = f"the mean of its full-scale schedule ({len(reqs)} requests, seed 0)"
        if scenario.sessions is not None:
            how += "; a turn's history is not counted, so later turns' prompts are longer than this"
    return (max(1, round(n_in)), max(1, round(n_out)),
            f"request lengths: {n_in:.0f} input and {n_out:.0f} output tokens, scenario {scenario.name!r}'s mean at "
            f"full scale ({how}); no measured run of this model on it")
