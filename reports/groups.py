"""The comparison table's rows: one per option, a repeat group shown as one row with its intervals.

A group of repeats (`advisor.repeats.group.group_runs`; a run made on its own is a group of one) shows each
figure as its median with the order-statistic interval, its SLOs as met / failed / not established
over all its requests (`advisor.recommend.options.judge`, the recommender's own rule), and which
percentiles its requests can support (MLPerf early stopping) with how many more the others need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from advisor.metrics.intervals import Interval, median_interval
from advisor.metrics.registry import not_recorded
from advisor.metrics.slo_evidence import RunSample, load_sample, run_slos
from advisor.metrics.support import percentile_support
from advisor.recommend.options import judge
from advisor.repeats.group import FIGURES, RepeatGroup, group_runs
from reports.costs import RunPrice
from reports.labels import load_text


def _text(iv: Interval | None, unrecorded: bool = False) -> dict[str, Any]:
    if iv is None:
        return {"value": None, "range": None, "not_recorded": unrecorded}
    if iv.is_point:
        return {"value": iv.value, "range": None, "not_recorded": False}
    return {"value": iv.value, "range": (iv.low, iv.high), "not_recorded": False}


def _support(n: int) -> str:
    sup = percentile_support(n)
    ok = [s for s in sup if s.supported]
    text = ("up to p" + f"{ok[-1].percentile:g}") if ok else "none"
    nxt = next((s for s in sup if not s.supported), None)
    if nxt is not None:
        text += f"; p{nxt.percentile:g} needs {nxt.more_needed:,} more"
    return text


def option_row(group: RepeatGroup, label: str, prices: dict[str, RunPrice],
               samples: dict[str, RunSample]) -> dict[str, Any]:
    """One comparison row for a repeat group (or a single run)."""
    first = group.runs[0]
    slos, pct = run_slos(first)
    opt = judge(group.runs, slos, pct, samples)
    n_ok = sum(r.summary.n_ok for r in group.runs)
    costs = [c.measured.output_usd for r in group.runs if (p := prices.get(r.run_id)) and (c := p.cost)
             and c.measured.output_usd is not None]
    cost = median_interval(costs) if costs else None
    # cold start (EngineInfo.ready_s); repeats on one engine all carry that engine's start
    ready = [v for r in group.runs if (v := r.engine.ready_s) is not None]
    status = group.status
    return {
        "label": label + (f" ×{group.n} repeats" if group.is_repeated else ""), "group_id": group.group_id,
        "run_ids": [r.run_id for r in group.runs], "n": group.n, "status": status, "valid": status == "VALID",
        "load": load_text(first), "n_ok": n_ok, "n_requests": sum(r.summary.n_requests for r in group.runs),
        "figures": {f.key: _text(group.interval(f.key), not_recorded((r.summary for r in group.runs), f.metric)) for f in FIGURES},  # the registry's, then rates,
        "slos": [{"name": f"p{c.percentile:g} {c.metric.removesuffix('_ms').upper()}", "status": c.status,
                  "text": c.text()} for c in opt.checks.values()],
        "slo_set": any(v is not None for v in slos.values()),  # without one, goodput is every ok request: not shown
        "support": _support(n_ok), "usd_1m_out": _text(cost),
        "ready_s": _text(median_interval(ready) if ready else None),
        "coverage": next((iv.coverage for iv in group.figures().values() if iv.coverage is not None), None),
    }


def option_rows(runs: Sequence[Any], labels: dict[str, str], prices: dict[str, RunPrice]) -> list[dict[str, Any]]:
    """Every option of the report, in the runs' order."""
    samples = {r.run_id: s for r in runs if (s := load_sample(r)) is not None}
    return [option_row(g, labels[g.runs[0].run_id], prices, samples) for g in group_runs(runs)]
