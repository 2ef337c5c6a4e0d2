"""The numbers and sentences of the report's sections, read off saved runs and the recommendation.

Plain data for the templates (jinja2 escapes every string on output). Nothing is
computed here that the runs, `reports.costs` or the recommender do not already
hold: this module picks, formats and flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from advisor.metrics.lag import LAG_FLOOR_MS  # the send-lag rule's floor; the rule itself is in the verdict
from advisor.metrics.registry import METRIC_BY_KEY, METRICS, not_recorded
from advisor.repeats.group import FIGURES, figure_value
from advisor.run.rates import offered_rps
from advisor.saved.store import RunResult
from reports.constraints_text import constraints_text
from reports.costs import RunPrice
from reports.executive import executive
from reports.gpu import gpu_table
from reports.groups import option_rows
from reports.labels import (
    engine_name,
    is_valid,
    lag_ms,
    load_text,
    model_name,
    run_label,
    run_labels,
    scenario_name,
    status,
)
from reports.machines import machines
from reports.selection import RecommendationResult

if TYPE_CHECKING:
    from advisor.recommend.run_selection import RunSelection

# every registered per-request metric's definition (`advisor/metrics/defs/`), then the run-level figures
METRIC_DEFINITIONS = (
    *((f"{m.header} ({m.unit})", m.definition + ("; higher is better: its worst tail is p10, p5, p1"
                                                 if m.better == "higher" else "")) for m in METRICS),
    ("goodput", "requests/s over the window that met every SLO; SLO attainment = good / attempted"),
    ("throughput", "over the measurement window only (warm-up and cool-down excluded); peak over 1 s buckets"),
    ("cost per 1M tokens", "($/hour x instances) / (tokens/s x 3600) x 1e6, at measured throughput and at goodput"),
)


# the per-run table's per-request columns: the metric registry's headline figures
# the run tables' figure columns: each metric's report percentiles (the registry says which), then the rates
REPORT_FIGURES = tuple(f for f in FIGURES if f.metric not in METRIC_BY_KEY
                       or f.percentile in METRIC_BY_KEY[f.metric].report_percentiles)
PER_REQUEST_COLUMNS = tuple(f for f in REPORT_FIGURES if f.metric in METRIC_BY_KEY)


def run_row(run: RunResult, label: str, price: RunPrice | None) -> dict[str, Any]:
    """One row of the comparison table."""
    s = run.summary
    cost = price.cost if price else None
    return {
        "run_id": run.run_id, "label": label, "status": status(run), "valid": is_valid(run),
        "scenario": scenario_name(run), "engine": engine_name(run), "model": model_name(run),
        "version": run.engine.version, "device": run.engine.device, "load": load_text(run),
        "n_requests": s.n_requests, "n_ok": s.n_ok, "error_rate": s.error_rate,
        "figures": {f.key: figure_value(run, f.key) for f in PER_REQUEST_COLUMNS},
        "not_recorded": [f.key for f in PER_REQUEST_COLUMNS if not_recorded((s,), f.metric)],
        "rps": s.requests_per_s, "out_tps": s.output_tokens_per_s,
        "goodput": s.goodput_rps, "attainment": s.slo_attainment,
        "slo_set": run.slos.any_limit,
        "slo_met": s.slo_met, "slo_margin": s.slo_margin,
        "rss_peak_mb": run.telemetry.rss_peak_mb, "ready_s": run.engine.ready_s,
        "usd_1m_out": cost.measured.output_usd if cost else None,
        "usd_1m_out_slo": cost.at_slo.output_usd if cost and cost.at_slo else None,
        "monthly_usd": price.monthly_usd if price else None, "price_source": price.source if price else "",
    }


def risks(runs: Sequence[RunResult], labels: dict[str, str], prices: dict[str, RunPrice],
          rec: RecommendationResult) -> list[str]:
    """What a buyer should know before acting: invalid runs, errors, lag, estimates and unknowns."""
    out: list[str] = []
    for run in runs:
        label, s = labels[run.run_id], run.summary
        if not is_valid(run):
            reasons = " ".join(str(x) for x in run.verdict.reasons) or "no reason recorded"
            out.append(f"{label}: verdict {status(run)}: {reasons}")
        if s.n_errors:
            kinds = ", ".join(f"{k}: {v}" for k, v in s.errors_by_kind.items())
            out.append(f"{label}: {s.n_errors} failed requests ({kinds})")
        late = _late_sends(run)
        if is_valid(run) and late:  # an invalid run's reasons already say so
            out.append(f"{label}: {late}; latencies from t_send may understate what users see")
        if s.token_count_mismatch:
            out.append(f"{label}: engine and client token counts differ by {s.token_count_mismatch}")
        if s.n_out_short:
            out.append(f"{label}: {s.n_out_short} requests got fewer output tokens than asked")
        dropped = s.sessions.n_truncated if s.sessions else None
        if dropped:
            out.append(f"{label}: {dropped} conversations outgrew the context and dropped their oldest turns "
                       "(a chat app's sliding window): those prompts are shorter than the full history")
    if any(not r.telemetry.gpu for r in runs):
        out.append("energy was not measured for runs without a GPU energy counter (none is estimated)")
    unpriced = [labels[rid] for rid, p in prices.items() if p.usd_per_hour is None]
    if unpriced:
        out.append(f"no hardware price for {', '.join(unpriced)}: their cost is not shown")
    if rec.recommendation:
        n_est = sum(1 for r in rec.recommendation.get("rows") or [] if r.get("source") == "estimated")
        if n_est:
            out.append(f"{n_est} recommendation rows are estimated (roofline extrapolation), not measured; "
                       "see their assumptions and the backtest")
    return out


def _late_sends(run: RunResult) -> str | None:
    """Late sends a VALID run still had (within what the send-lag rule allows), in words; None if none."""
    check = run.summary.lag_check
    if check:
        if not check.n_late:
            return None
        return (f"{check.n_late} of {check.n} requests were sent more than {check.limit_ms:.3g} ms late "
                "(within what the send-lag rule allows)")
    lag = lag_ms(run)  # a run saved without a lag check: judged by its lag percentiles
    value = lag.at(99) if lag.at(99) is not None else lag.max
    if value is None or float(value) <= LAG_FLOOR_MS:
        return None
    return f"the load generator sent requests up to {float(value):.1f} ms late (p99 or max)"


def estimated_items(prices: dict[str, RunPrice], rec: RecommendationResult) -> list[str]:
    """What in this report is estimated or assumed rather than measured."""
    out = ["monthly cost assumes the instance is on 730 hours a month", "prices are catalog or user figures, not "
           "measurements; cost at the SLO point scales measured tokens/request to goodput"]
    for source in sorted({p.source for p in prices.values() if p.usd_per_hour is not None}):
        out.append(f"price: {source}")
    if rec.recommendation:
        out.extend(str(n) for n in rec.recommendation.get("notes") or [])
    return out


def methodology(runs: Sequence[RunResult], labels: dict[str, str]) -> dict[str, Any]:
    """Scenarios as run, verdicts with reasons, and load generator lag per run."""
    scenarios: dict[str, dict[str, Any]] = {}
    for run in runs:
        scenarios.setdefault(scenario_name(run), {"scenario": run.scenario, "slos": run.slos.to_dict(),
                                                  "schedules": []})["schedules"].append(
            {"label": labels[run.run_id], **run.schedule.to_dict(), "offered_rps": offered_rps(run)})
    verdicts = [{"label": labels[r.run_id], "status": status(r), "valid": is_valid(r),
                 "reasons": [str(x) for x in r.verdict.reasons]} for r in runs]
    lag = []
    for r in runs:
        d = lag_ms(r)
        check = r.summary.lag_check
        lag.append({"label": labels[r.run_id], "p50": d.at(50), "p99": d.at(99), "max": d.max,
                    "n": d.n, "wall_s": r.loadgen.wall_s, "limit_ms": check.limit_ms if check else None,
                    "n_late": check.n_late if check else None,
                    "interrupted": r.loadgen.interrupted})
    return {"definitions": METRIC_DEFINITIONS, "scenarios": scenarios, "verdicts": verdicts, "lag": lag,
            "lag_floor_ms": LAG_FLOOR_MS}


def environments(runs: Sequence[RunResult], labels: dict[str, str]) -> dict[str, Any]:
    """Each machine (one per fingerprint, `reports.machines`) with the runs made on it, and each run's engine."""
    engines = [{"label": labels[r.run_id], "run_id": r.run_id, "created_utc": r.created_utc,
                **{k: v for k, v in r.engine.to_dict().items() if k not in ("extra", "notes")},
                "notes": list(r.engine.notes),
                "engine_stats": r.telemetry.engine_stats} for r in runs]
    return {"machines": machines(runs, labels), "engines": engines}


def turn_tables(runs: Sequence[RunResult], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Multi-turn runs: the per-turn rows (TTFT, prompt length) and session facts, as saved."""
    return [{"label": labels[r.run_id], **r.summary.sessions.to_dict()} for r in runs if r.summary.sessions]


def sweep_row(sweep: dict[str, Any]) -> dict[str, Any]:
    """A saved sweep.json for the report's table: its capacity said in words, with why."""
    from advisor.sweep.capacity import capacity_text

    cap = sweep.get("capacity") or {}
    text = capacity_text(cap.get("capacity_rps"), cap.get("capacity_users"))
    return {**sweep, "capacity_text": f"{text}: {cap['reason']}" if cap.get("reason") else text}


def build_context(runs: Sequence[RunResult], prices: dict[str, RunPrice], rec: RecommendationResult,
                  sweeps: Sequence[dict[str, Any]] = (), usd_per_kwh: float | None = None) -> dict[str, Any]:
    """Everything the report template renders except the figures."""
    labels = run_labels(runs)
    rows = [run_row(r, labels[r.run_id], prices.get(r.run_id)) for r in runs]
    return {"rows": rows, "options": option_rows(runs, labels, prices), "figure_columns": REPORT_FIGURES,
            "per_request_columns": PER_REQUEST_COLUMNS, "executive": executive(runs, prices, rec),
            "risks": risks(runs, labels, prices, rec), "estimated": estimated_items(prices, rec),
            "methodology": methodology(runs, labels), "environment": environments(runs, labels),
            "recommendation": rec.recommendation, "rec_reason": rec.reason, "constraints": rec.constraints,
            "constraints_text": constraints_text(rec.constraints, [r.get("slos") or {} for r in
                                                                   (rec.recommendation or {}).get("rows") or []]),
            "sweeps": [sweep_row(s) for s in sweeps], "statistics": statistics_notes(),
            "turns": turn_tables(runs, labels), "gpu": gpu_table(runs, labels, usd_per_kwh)}


def left_out_rows(chosen: RunSelection, runs: Sequence[RunResult]) -> list[dict[str, str]]:
    """Each run given but not shown (`advisor recommend` leaves it out too), with its label and why."""
    by_id = {r.run_id: r for r in runs}
    return [{"run_id": x.run_id, "label": run_label(by_id[x.run_id]), "reason": x.reason} for x in chosen.left_out]


def statistics_notes() -> dict[str, Any]:
    """How intervals, percentile support and estimate ranges are made (the methodology section)."""
    from advisor.metrics.intervals import METHOD, coverage_table
    from advisor.metrics.support import RULE, requests_needed
    from advisor.recommend.error_bars import DEFAULT_ERROR_FACTOR

    return {"interval_method": METHOD, "coverage": coverage_table(10), "support_rule": RULE,
            "support_n": [(p, requests_needed(0, p)) for p in (50.0, 90.0, 95.0, 99.0, 99.9)],
            "default_error_factor": DEFAULT_ERROR_FACTOR}
