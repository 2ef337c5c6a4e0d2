"""Batched arrivals from a log: groups of simultaneous requests, their size and their period.

Some traffic comes in groups: the Mooncake conversation trace sends ~10
requests on the same millisecond every ~3 s (10,851 of its 12,030 gaps are
0 ms). No renewal process with one gap distribution reproduces that: gamma
or on/off gaps with a CV of ~100 give either nothing or thousands of
requests in a minute. Requests closer than SIMULTANEOUS_S (the millisecond
of the coarsest stamps) form a group; the fit keeps the log's exact mean
rate (period = mean group size / rate), the CV of the group sizes and the
CV of the gaps between groups.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from scenarios.fit.arrival_fit import ArrivalFit, sig

SIMULTANEOUS_S = 0.001
MIN_MEAN_GROUP = 2.0  # requests per group, for batched arrivals to be tried at all


def groups(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sizes of the groups of simultaneous requests, gaps between consecutive groups) of sorted times."""
    cut = np.flatnonzero(np.diff(t) > SIMULTANEOUS_S)
    starts = np.concatenate([[0], cut + 1])
    sizes = np.diff(np.concatenate([starts, [t.size]]))
    return sizes, np.diff(t[starts])


def fit_batched(t: np.ndarray, base: ArrivalFit) -> ArrivalFit | None:
    """Batched arrivals fitted to sorted times, or None when the log's groups are too small to call batches."""
    sizes, between = groups(t)
    mean_size = float(sizes.mean())
    if mean_size < MIN_MEAN_GROUP or between.size < 2:
        return None
    size_cv = float(sizes.std() / mean_size)
    period = mean_size / base.rate_rps  # the log's exact mean rate
    period_cv = float(between.std() / between.mean())
    spec = {"process": "batched", "batch_size": sig(mean_size), "period_s": sig(period),
            "size_cv": sig(min(size_cv, 10.0), 3), "period_cv": sig(min(period_cv, 10.0), 3)}
    share = 1 - sizes.size / t.size
    why = (f"batched arrivals: {share:.0%} of requests come within {SIMULTANEOUS_S * 1000:g} ms of the one before, "
           f"in {sizes.size:,} groups of {mean_size:.3g} requests on average (size CV {size_cv:.2g}), one group "
           f"every {period:.4g} s (period CV {period_cv:.2g})")
    assert math.isfinite(period) and period > 0, period
    return replace(base, spec=spec, why=why)
