"""What the Streamlit dashboard (`app.py`) shows, without Streamlit: tables, filters, constraints, runs.

`app.py` only lays out widgets and calls these; each function here is plain Python
over saved runs, the recommender and `advisor.run.bench`, so it is tested without a
browser. The runs folder is `ADVISOR_RUNS` (default `runs`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import adapters
from advisor.metrics.registry import HEADLINE, Metric
from advisor.recommend.rests_on import model_name as headline_model
from advisor.saved.store import RunResult, readable_runs
from reports.costs import price_runs
from reports.html import render_report
from reports.labels import engine_name, is_valid, load_text, model_name, run_labels, scenario_name, status
from reports.selection import RecommendationResult, make_recommendation

RUNS_ENV = "ADVISOR_RUNS"
# the run page's engines: no server to start, bounded in time
DASHBOARD_ENGINES = (adapters.TEST_ENGINE, adapters.BUILTIN_ENGINE)
MAX_RUN_DURATION_S = 120.0
MAX_RUN_RATE_RPS = 50.0


def runs_root() -> Path:
    """The runs folder: $ADVISOR_RUNS, else ./runs."""
    return Path(os.environ.get(RUNS_ENV) or "runs")


def load_runs(root: Path, warnings: list[str] | None = None) -> list[RunResult]:
    """Every readable run under `root`, newest first (none if the folder does not exist yet).

    A damaged run is left out with one line in `warnings` naming it and why.
    """
    sink = warnings if warnings is not None else []
    return list(reversed(readable_runs(root, sink.append))) if root.is_dir() else []


def filter_options(runs: Sequence[RunResult]) -> dict[str, list[str]]:
    """The values each filter can take, sorted."""
    return {"scenario": sorted({scenario_name(r) for r in runs}), "engine": sorted({engine_name(r) for r in runs}),
            "verdict": sorted({status(r) for r in runs})}


def filter_runs(runs: Sequence[RunResult], scenarios: Sequence[str] = (), engines: Sequence[str] = (),
                verdicts: Sequence[str] = ()) -> list[RunResult]:
    """Runs matching every non-empty filter (an empty filter lets everything through)."""
    return [r for r in runs if (not scenarios or scenario_name(r) in scenarios)
            and (not engines or engine_name(r) in engines) and (not verdicts or status(r) in verdicts)]


def _column(m: Metric) -> str:
    """A headline metric's column: 'TTFT p95 ms' (for a rate per user the percentile is its low tail)."""
    assert m.headline is not None
    return f"{m.header} p{m.headline:g} {m.unit}"


def _headline(run: RunResult) -> dict[str, str]:
    """The run's headline metrics (`Metric.headline`), each at its headline percentile."""
    out = {}
    for m in HEADLINE:
        d = run.summary.recorded(m.key)
        out[_column(m)] = "not recorded" if d is None else _r(d.at(m.headline or 50.0))
    return out


def _r(value: Any, digits: int = 3) -> str:
    """A number as short text for tables ("" when undefined): st.table would print 4 decimals."""
    if value is None:
        return ""
    v = float(value)
    return f"{v:,.0f}" if abs(v) >= 10 ** digits else f"{v:.{digits}g}"


def runs_table(runs: Sequence[RunResult]) -> list[dict[str, Any]]:
    """One display row per run: what it ran, its verdict and headline numbers."""
    labels = run_labels(runs)
    return [{"run": labels[r.run_id], "verdict": status(r), "scenario": scenario_name(r), "engine": engine_name(r),
             "model": model_name(r), "load": load_text(r), **_headline(r), "output tok/s": _r(r.summary.output_tokens_per_s),
             "errors": str(r.summary.n_errors), "created (UTC)": r.created_utc, "id": r.run_id} for r in runs]


def gpu_rows(runs: Sequence[RunResult], usd_per_kwh: float | None = None) -> tuple[list[dict[str, Any]], str]:
    """The report's GPU figures as display rows (runs with GPU telemetry only), and the $/kWh it used, sourced."""
    from reports.gpu import gpu_table

    t = gpu_table(runs, run_labels(runs), usd_per_kwh)
    rows = [{"run": g["label"], "GPU": g["gpu"], "memory peak / total MiB": f"{_r(g['mem_peak_mb'])} / {_r(g['mem_total_mb'])}",
             "power mean / max W": f"{_r(g['power_mean_w'])} / {_r(g['power_max_w'])}",
             "GPU busy %": _r(g["util_pct"]), "bound": g["bound"], "J / output token": _r(g["j_per_output_token"]),
             "energy $ / 1M output tokens": _r(g["energy_usd_per_1m_out"])} for g in t["rows"]]
    return rows, f"energy at ${t['usd_per_kwh']:g}/kWh ({t['price_source']}); GPU board energy only"


def verdict_notes(runs: Sequence[RunResult]) -> list[str]:
    """One line per run that is not VALID, with its reasons (shown beside every view of it)."""
    labels = run_labels(runs)
    return [f"{labels[r.run_id]}: {status(r)}: " + " ".join(str(x) for x in r.verdict.reasons)
            for r in runs if not is_valid(r)]


def scenarios_by_runs(runs: Sequence[RunResult]) -> list[str]:
    """The runs' scenario names, the one with the most runs first (ties by name)."""
    counts = Counter(r.scenario_name or "?" for r in runs)
    return sorted(counts, key=lambda name: (-counts[name], name))


def constraints_from_widgets(scenario: str | None, ttft_ms: float, tpot_ms: float, peak_rps: float,
                             budget_usd_month: float, deployment: str, max_complexity: str,
                             include_estimates: bool) -> dict[str, Any]:
    """Widget values to a constraints dict for the recommender (0 means "not set")."""
    d: dict[str, Any] = {"deployment": deployment, "max_complexity": max_complexity,
                         "include_estimates": include_estimates}
    for key, value in (("ttft_ms", ttft_ms), ("tpot_ms", tpot_ms), ("peak_rps", peak_rps),
                       ("budget_usd_month", budget_usd_month)):
        if value and value > 0:
            d[key] = float(value)
    if scenario:
        d["scenario"] = scenario
    return d


def recommend_runs(runs: Sequence[RunResult], constraints: dict[str, Any]) -> RecommendationResult:
    """The recommender on these runs under these constraints (or why there is no recommendation)."""
    if not runs:
        return RecommendationResult(None, "no runs: start one on the run page or with `advisor bench`")
    return make_recommendation(runs, constraints)


def _interval(value: float | None, rng: dict[str, Any] | None, digits: int = 3) -> str:
    """'12 [10, 15]' for a figure with a range, '12' without one ('' when undefined)."""
    text = _r(value, digits)
    if text and rng and rng.get("low") != rng.get("high"):
        text += f" [{_r(rng['low'], digits)}, {_r(rng['high'], digits)}]"
    return text


def ranking_table(rec: RecommendationResult, top: int = 20) -> list[dict[str, Any]]:
    """The recommender's ranked rows, for display: one short reason each, costs with their ranges."""
    rows = (rec.recommendation or {}).get("rows") or []
    out = []
    for r in rows[:top]:
        margins = ", ".join(f"{k} {v:.3g}" for k, v in (r.get("slo_margin_ms") or {}).items())
        fails = ", ".join(dict.fromkeys(f["constraint"] for f in r.get("failures") or []))  # the why says the detail
        evidence = r.get("source") + (f" ({r['repeats']} repeats)" if (r.get("repeats") or 1) > 1 else "")
        if not r.get("headline_ok"):
            evidence += ", cannot carry a decision"
        out.append({"rank": str(r.get("rank")), "engine": r.get("engine"), "hardware": r.get("hardware_name"),
                    "model": r.get("model"), "evidence": evidence,
                    "replicas": "" if r.get("replicas") is None else str(r["replicas"]),
                    "monthly $": _interval(r.get("monthly_usd"), r.get("monthly_range"), 4),
                    "$/1M out": _r(r.get("usd_per_1m_output")),
                    "SLO margin ms": margins, "result": "passes" if r.get("passes") else f"fails: {fails}",
                    "why": r.get("why")})
    return out


def options_table(runs: Sequence[RunResult]) -> list[dict[str, Any]]:
    """One display row per option: a repeat group is one row, each figure its median [interval]."""
    from reports.groups import option_rows

    labels = run_labels(runs)
    out = []
    for o in option_rows(runs, labels, price_runs(runs)):
        f = o["figures"]

        def cell(key: str, figs: dict[str, Any] = f) -> str:
            v = figs[key]
            if v["not_recorded"]:
                return "not recorded"
            rng = {"low": v["range"][0], "high": v["range"][1]} if v["range"] else None
            return _interval(v["value"], rng)

        out.append({"option": o["label"], "verdict": o["status"], "runs": str(o["n"]), "load": o["load"],
                    **{_column(m): cell(m.figure_key(m.headline or 50.0)) for m in HEADLINE},
                    "output tok/s": cell("output_tokens_per_s"),
                    "SLOs": "; ".join(f"{c['name']}: {c['status']}" for c in o["slos"]),
                    "percentiles supported": o["support"],
                    "cold start s": _interval(o["ready_s"]["value"], {"low": o["ready_s"]["range"][0],
                                                                      "high": o["ready_s"]["range"][1]}
                                              if o["ready_s"]["range"] else None),
                    "interval": "single run" if o["coverage"] is None else f"{o['coverage']:.0%} of the median"})
    return out


def headline(rec: RecommendationResult) -> tuple[str, str, list[str]]:
    """(kind, one line, commands): kind is "recommended", "no_trust" or "none"."""
    d = rec.recommendation or {}
    best = best_row(rec)
    if best:
        from reports.executive import money

        return ("recommended", f"Recommended: {best['engine']} serving {headline_model(str(best.get('model') or ''))} on "
                f"{best['hardware_name']} ({best['config']}), "
                f"{best['replicas']} replica(s), {money(best)}: {best['why']}", [])
    gap = d.get("evidence")
    if gap:
        return "no_trust", gap["reason"][0].upper() + gap["reason"][1:], list(gap["commands"])
    return "none", f"No recommendation: {rec.reason or 'no option meets every constraint'}", []


def best_row(rec: RecommendationResult) -> dict[str, Any] | None:
    d = rec.recommendation or {}
    return next((r for r in d.get("rows") or [] if r.get("key") == d.get("best")), None)


def report_html(runs: Sequence[RunResult], constraints: dict[str, Any] | None = None) -> bytes:
    """The HTML report of these runs, as the download button hands it out."""
    rec = make_recommendation(runs, constraints) if runs else None
    return render_report(runs, prices=price_runs(runs), recommendation=rec).encode("utf-8")


@dataclass(frozen=True)
class RunRequest:
    """A bounded benchmark started from the dashboard."""

    scenario: str
    engine: str = adapters.TEST_ENGINE
    rate_rps: float = 5.0
    duration_s: float = 10.0
    max_output_tokens: int = 32
    ttft_ms: float = 30.0  # an engine that takes them as options (the test engine's delays) only
    tpot_ms: float = 5.0

    def __post_init__(self) -> None:
        if self.engine not in DASHBOARD_ENGINES:
            raise ValueError(f"engine must be one of {', '.join(DASHBOARD_ENGINES)} here; run others with `advisor bench`")
        if not 0 < self.rate_rps <= MAX_RUN_RATE_RPS:
            raise ValueError(f"rate must be in (0, {MAX_RUN_RATE_RPS:g}] req/s, got {self.rate_rps}")
        if not 0 < self.duration_s <= MAX_RUN_DURATION_S:
            raise ValueError(f"duration must be in (0, {MAX_RUN_DURATION_S:g}] s, got {self.duration_s}")


def start_run(req: RunRequest, root: Path, progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Run one benchmark with `advisor.run.bench` and save it under `root`."""
    from advisor.run.bench import BenchConfig, bench_once
    from scenarios.overrides import Overrides

    takes = adapters.adapter_class(req.engine).Options.model_fields
    options = {k: v for k, v in (("ttft_ms", req.ttft_ms), ("tpot_ms", req.tpot_ms)) if k in takes}
    ov = Overrides(rate_rps=req.rate_rps, duration_s=req.duration_s, warmup_s=min(2.0, req.duration_s / 5),
                   max_output_tokens=req.max_output_tokens)
    cfg = BenchConfig(scenario=req.scenario, engine=req.engine, overrides=ov, engine_options=options, out_dir=root,
                      timeout_s=60.0, max_run_s=req.duration_s * 3 + 30.0)
    return bench_once(cfg, progress=progress)
