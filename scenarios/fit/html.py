"""The fit report as one self-contained HTML page with plots (opens offline, like `advisor report`).

plotly.js is inlined once; each figure travels as JSON in a
`<script type="application/json">` block (with `<`, `>` and `&` escaped) and
is drawn on load. jinja2 autoescapes every value, so file names and field
names from a log show as text. Kept apart from `reports/` on purpose:
scenarios is a bottom layer and imports nothing from above it.
"""

from __future__ import annotations

import html
import math
import time
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from scenarios.fit.report import FitReport

TEMPLATES = Path(__file__).parent / "templates"
LOG, SCHED, MODEL = "#1f77b4", "#ff7f0e", "#2ca02c"


def _num(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, int):
        return f"{v:,}"
    v = float(v)
    if not math.isfinite(v):
        return "—"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _diff(row: Any) -> str:
    if row.kind == "ks":
        return f"{row.schedule:.3f}"
    if row.kind == "abs":
        return f"{row.schedule - row.log:+.3f}"
    d = row.rel_diff
    return "—" if d is None else f"{d * 100:+.1f}%"


def _flag(row: Any) -> bool:
    if row.kind == "ks":
        return row.schedule > 0.05
    if row.kind == "abs":
        return abs(row.schedule - row.log) > 0.05
    d = row.rel_diff
    return d is not None and abs(d) > 0.10


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=_num, diff=_diff, flag=_flag)
    return env


@cache
def _plotly_js() -> str:
    js = get_plotlyjs()
    assert "</script" not in js.lower(), "plotly.js would end its own <script> element"
    return js


def _json(fig: go.Figure) -> str:
    return fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _layout(fig: go.Figure, title: str, x: str, y: str, log_x: bool = False, log_y: bool = False) -> go.Figure:
    fig.update_layout(title=html.escape(title), template="plotly_white", height=380, margin=dict(l=60, r=20, t=50, b=50),
                      legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(title=x, type="log" if log_x else "linear")
    fig.update_yaxes(title=y, type="log" if log_y else "linear")
    return fig


def _cdf(series: dict[str, Any], q: list[float], name: str, unit: str) -> go.Figure:
    fig = go.Figure()
    for who, color in (("log", LOG), ("schedule", SCHED)):
        xs = [max(v, 1e-6) for v in series[who]]
        fig.add_trace(go.Scatter(x=xs, y=q, mode="lines", name=who, line=dict(color=color)))
    return _layout(fig, f"{name}: CDF, log vs generated schedule", unit, "fraction of requests", log_x=True)


def figures(report: FitReport) -> list[dict[str, str]]:
    s = report.series
    q = s["quantiles"]
    figs = [("input", _cdf(s["input tokens"], q, "Input tokens", "tokens")),
            ("output", _cdf(s["output tokens"], q, "Output tokens", "tokens")),
            ("gaps", _cdf(s["gap between requests (s)"], q, "Gaps between requests", "seconds"))]
    sc = go.Figure()
    for who, color in (("log", LOG), ("schedule", SCHED)):
        xs, ys = s["scatter"][who]
        sc.add_trace(go.Scattergl(x=xs, y=ys, mode="markers", name=who, marker=dict(color=color, size=4, opacity=0.4)))
    figs.append(("joint", _layout(sc, "Input vs output tokens (a sample of each)", "input tokens", "output tokens",
                                  log_x=True, log_y=True)))
    r = s["rate"]
    rate = go.Figure()
    rate.add_trace(go.Scatter(x=r["t_s"], y=r["log"], mode="lines", name="log", line=dict(color=LOG)))
    rate.add_trace(go.Scatter(x=r["t_s"], y=r["schedule"], mode="lines", name="schedule", line=dict(color=SCHED)))
    if "model" in r:
        rate.add_trace(go.Scatter(x=r["t_s"], y=r["model"], mode="lines", name="fitted profile",
                                  line=dict(color=MODEL, dash="dash")))
    figs.append(("rate", _layout(rate, "Request rate over the log's time line", "seconds from the first request",
                                 "requests per second")))
    return [{"id": f"fig-{i}", "json": _json(f)} for i, f in figs]


def render_fit_html(report: FitReport, scenario_yaml: str, generated_utc: str | None = None) -> str:
    """The report page as one HTML string."""
    quantities: dict[str, list[Any]] = {}
    for row in report.comparison:
        quantities.setdefault(row.quantity, []).append(row)
    return _env().get_template("fit.html.j2").render(
        r=report, quantities=quantities, figures=figures(report), scenario_yaml=scenario_yaml,
        generated_utc=generated_utc or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), plotly_js=_plotly_js())
