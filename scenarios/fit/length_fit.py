"""Token lengths of a log: observed (input, output) pairs resampled together, or a correlated lognormal fit.

Pairs (the default) keep the joint distribution exactly, correlation and
shared prefix blocks included; they are stored once per distinct row with
a count, in a gzip CSV beside the scenario (`scenarios.pairs`). The
lognormal option gives each length the log's mean and median, clipped to
its min and max, with the correlation of the logarithms; it falls back to
pairs (and says so) where a lognormal cannot match, e.g. a mean below the
median.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from scenarios.errors import ScenarioError
from scenarios.fit.collect import LogData
from scenarios.lengths import Lognormal
from scenarios.pairs import Pairs

LengthMode = Literal["pairs", "lognormal"]


@dataclass(frozen=True)
class LengthFit:
    workload: dict[str, Any]  # the scenario's `workload` block (the pairs file name filled in by the writer)
    mode: LengthMode
    pairs: Pairs | None  # what goes in the pairs file
    comment: str
    notes: list[str] = field(default_factory=list)


def to_pairs(data: LogData) -> Pairs:
    """Distinct (input, output, prefix) rows of the reservoir with their counts, in a stable order."""
    keys: dict[tuple[int, int, tuple[int, ...]], int] = {}
    for a, b, p in zip(data.pairs_in.tolist(), data.pairs_out.tolist(), data.pairs_prefix):
        k = (a, b, p)
        keys[k] = keys.get(k, 0) + 1
    rows = sorted(keys.items())
    return Pairs(np.array([k[0] for k, _ in rows], dtype=np.int64), np.array([k[1] for k, _ in rows], dtype=np.int64),
                 np.array([c for _, c in rows], dtype=np.int64), tuple(k[2] for k, _ in rows))


def _lognormal(values: np.ndarray, mean: float, lo: int, hi: int) -> dict[str, Any] | None:
    median = float(np.median(values))
    if not (mean >= median and lo <= median <= hi) or hi <= lo:
        return None
    try:
        Lognormal(mean, median, lo, hi).sigma  # noqa: B018 (solves the spread; raises where none fits)
    except ScenarioError:
        return None
    return {"dist": "lognormal", "mean": float(f"{mean:.5g}"), "median": float(f"{median:.5g}"), "min": lo, "max": hi}


def fit_lengths(data: LogData, mode: LengthMode) -> LengthFit:
    s = data.lengths
    sampled = len(data.pairs_in) < s.n
    scope = (f"a uniform sample of {len(data.pairs_in):,} of the {s.n:,} observed (input, output) pairs" if sampled
             else f"all {s.n:,} observed (input, output) pairs")
    notes = []
    if mode == "lognormal":
        d_in = _lognormal(data.pairs_in, s.mean_in, s.min_in, s.max_in)
        d_out = _lognormal(data.pairs_out, s.mean_out, s.min_out, s.max_out)
        if d_in is not None and d_out is not None:
            rho = float(np.corrcoef(np.log(data.pairs_in), np.log(data.pairs_out))[0, 1]) \
                if np.ptp(data.pairs_in) and np.ptp(data.pairs_out) else 0.0
            wl = {"input": d_in, "output": d_out, "log_correlation": round(rho, 4)}
            comment = (f"lognormal input and output with the log's mean, median, min and max, and the correlation "
                       f"of their logarithms ({rho:.3f}); the pairs option keeps the exact joint distribution")
            if data.prefix is not None:
                notes.append("prefix reuse is kept only with resampled pairs (the default), not with --lengths lognormal")
            return LengthFit(wl, "lognormal", None, comment, notes)
        notes.append("a lognormal cannot match the log's lengths (a mean below the median, or a single value): "
                     "resampled pairs are used instead")
    pairs = to_pairs(data)
    comment = (f"{scope}, resampled together so their correlation is kept ({len(pairs):,} distinct rows); "
               f"log min-max: input {s.min_in}-{s.max_in}, output {s.min_out}-{s.max_out} tokens")
    return LengthFit({"pairs": {"file": ""}}, "pairs", pairs, comment, notes)
