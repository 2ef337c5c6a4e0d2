"""Multi-turn sessions of a log with session or conversation ids: how many, how long, how users pause.

Rows are grouped by session id and ordered by time. Think time is the gap
from one turn's answer to the next turn's arrival: arrival gap minus the
answer's latency where the log has latencies (an `end` time, `latency_s`
or `latency_ms`), else the whole arrival gap (an upper bound, said so).
Prompt growth is what a turn adds beyond the previous prompt and answer.
The result is the scenario's `sessions` block (see `spec.SessionSpec`), which
drives a multi-turn run: sessions start at the fitted rate (gamma gaps with the
CV of the log's session starts), each turn a think time after the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from scenarios.fit.collect import SessionRows
from scenarios.fit.stats import Summary, summarize
from scenarios.lengths import Lognormal


@dataclass(frozen=True)
class SessionFit:
    spec: dict[str, Any]
    n_sessions: int
    n_rows: int  # rows that carry a session id
    turns: Summary
    think_s: Summary | None  # None when no session has two turns
    think_from_latency: float  # share of think times that had the answer's latency subtracted
    overlaps: int  # next turn sent before the previous answer ended (think time 0)
    rate_rps: float
    mean_open_sessions: float
    growth_share: float | None  # turns whose prompt holds the previous prompt and answer
    new_tokens: Summary | None
    first_tokens: Summary | None
    comment: str


def count_spec(values: np.ndarray) -> dict[str, Any]:
    """A length spec for counts >= 1: fixed, lognormal (mean and median, clipped to min and max) or uniform."""
    v = np.asarray(values, dtype=np.float64)
    lo, hi = int(v.min()), int(v.max())
    if lo == hi:
        return {"dist": "fixed", "value": lo}
    mean, median = float(v.mean()), float(np.median(v))
    if mean >= median:
        try:
            Lognormal(mean, median, lo, hi).sigma  # noqa: B018 (raises where no spread fits)
            return {"dist": "lognormal", "mean": float(f"{mean:.4g}"), "median": float(f"{median:.4g}"), "min": lo,
                    "max": hi}
        except ValueError:
            pass
    return {"dist": "uniform", "min": lo, "max": hi}


def fit_sessions(rows: SessionRows, span_s: float) -> SessionFit:
    order = np.lexsort((rows.t_s, rows.key))
    key, t = rows.key[order], rows.t_s[order]
    n_in, n_out, lat = rows.n_in[order], rows.n_out[order], rows.latency_s[order]
    start = np.concatenate([[True], key[1:] != key[:-1]])
    sid = np.cumsum(start) - 1
    n_sessions = int(start.sum())
    turns = np.bincount(sid)
    nxt = np.flatnonzero(~start)  # rows that follow an earlier turn of the same session
    prev = nxt - 1
    known = ~np.isnan(lat[prev])
    think = t[nxt] - t[prev] - np.where(known, lat[prev], 0.0)
    overlaps = int((think < 0).sum())
    think = np.maximum(think, 0.0)
    usage = (n_in[nxt] >= 1) & (n_in[prev] >= 1) & (n_out[prev] >= 0)
    added = (n_in[nxt] - n_in[prev] - n_out[prev])[usage]
    growth = float((added >= 0).mean()) if added.size else None
    new_tokens = added[added >= 1]
    firsts = n_in[start & (n_in >= 1)]
    ends = t + np.where(np.isnan(lat), 0.0, lat)
    last = np.concatenate([np.flatnonzero(start)[1:] - 1, [t.size - 1]])
    open_time = float((ends[last] - t[start]).sum())
    rate = n_sessions / span_s
    starts = np.sort(t[start])
    start_gaps = np.diff(starts)
    # gap CV of session starts (the open-loop session arrivals); Poisson when too few sessions to tell
    cv = float(start_gaps.std() / start_gaps.mean()) if start_gaps.size >= 2 and start_gaps.mean() > 0 else 1.0
    spec: dict[str, Any] = {"rate_rps": float(f"{rate:.4g}"), "cv": float(f"{min(cv, 100.0):.3g}"),
                            "turns": count_spec(turns)}
    think_sum = summarize(think) if think.size else None
    spec["think_s"] = float(f"{think_sum.mean:.4g}") if think_sum else 0.0
    spec["think_cv"] = float(f"{min(think_sum.cv, 100.0):.3g}") if think_sum else 1.0
    if firsts.size:
        spec["first_tokens"] = count_spec(firsts)
    if new_tokens.size:
        spec["new_tokens"] = count_spec(new_tokens)
    turns_sum = summarize(turns)
    comment = (f"{n_sessions:,} sessions: {turns_sum.mean:.3g} turns on average (median {turns_sum.median:.3g}, "
               f"max {turns_sum.max:.0f}), {rate:.3g} new sessions/s, {open_time / span_s:.3g} open at a time")
    if think_sum:
        how = "after the answer ended" if known.all() else \
            "arrival to arrival (the log has no latencies, so this includes the answer time)" if not known.any() else \
            f"after the answer where the latency is logged ({known.mean():.0%} of turns)"
        comment += f"; think time {think_sum.mean:.3g} s on average (median {think_sum.median:.3g} s), {how}"
    return SessionFit(spec=spec, n_sessions=n_sessions, n_rows=int(t.size), turns=turns_sum, think_s=think_sum,
                      think_from_latency=float(known.mean()) if known.size else 0.0, overlaps=overlaps, rate_rps=rate,
                      mean_open_sessions=open_time / span_s, growth_share=growth,
                      new_tokens=summarize(new_tokens) if new_tokens.size else None,
                      first_tokens=summarize(firsts) if firsts.size else None, comment=comment)
