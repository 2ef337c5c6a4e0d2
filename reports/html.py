"""Render saved runs (and their recommendation) into one self-contained HTML file.

The file inlines plotly.js once (no network when it is opened), carries each figure
as JSON in a `<script type="application/json">` block drawn on load, and has print
CSS so it prints cleanly to PDF. jinja2 autoescape is on for every template, so any
name or message from a user or a server is shown as text; figure JSON is made safe
to embed (`<`, `>` and `&` as \\u escapes) and chart text is escaped in `figures`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from advisor import __version__
from advisor.saved.atomic import write_atomic
from advisor.saved.redact import redact_text
from advisor.saved.store import RunResult
from reports.context import build_context, left_out_rows
from reports.costs import RunPrice, price_runs
from reports.figures import report_figures
from reports.quality import quality_context
from reports.selection import RecommendationResult, shown_runs

TEMPLATES = Path(__file__).parent / "templates"
MAX_RECOMMENDATION_ROWS = 25


def _num(value: Any, digits: int = 3) -> str:
    if value is None or isinstance(value, bool):
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    v = float(value)
    return f"{v:,.0f}" if abs(v) >= 10 ** digits else f"{v:.{digits}g}"


def _pct(value: Any) -> str:
    return "—" if value is None else f"{float(value) * 100:.1f}%"


def _usd(value: Any, digits: int = 0) -> str:
    if value is None:
        return "—"
    v = float(value)
    return f"${v:,.{digits}f}" if digits == 0 or v >= 1 else f"${v:.{digits}g}"


def _compact(value: Any) -> str:
    """A dict or list on one line (k=v, ...); plain text, escaped by the template."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_compact(v)}" for k, v in value.items() if v is not None) or "—"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_compact(v) for v in value) + "]"
    return "—" if value is None else str(value)


def _capitalize_first(value: Any) -> str:
    text = str(value)
    return text[:1].upper() + text[1:]


def _range(value: Any) -> str:
    """An interval dict as '[low, high]' ('' for a point or none)."""
    if not value or value.get("low") == value.get("high"):
        return ""
    return f"[{_num(value['low'])}, {_num(value['high'])}]"


@cache
def environment() -> jinja2.Environment:
    """The report's jinja2 environment: autoescape on for every template, undefined names are errors."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=_num, pct=_pct, usd=_usd, compact=_compact, capitalize_first=_capitalize_first,
                       range=_range)
    return env


def figure_json(fig: go.Figure) -> str:
    """A figure as JSON that is safe inside a <script> element (no '<', '>' or '&' characters)."""
    text = fig.to_json()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_report(runs: Sequence[RunResult], *, prices: dict[str, RunPrice] | None = None,
                  recommendation: RecommendationResult | None = None, sweeps: Sequence[dict[str, Any]] = (),
                  title: str = "Inference engine benchmark report", generated_utc: str | None = None,
                  usd_per_kwh: float | None = None, quality: dict[str, Any] | None = None,
                  retrieval: Sequence[Any] = (), retrieval_drift: dict[str, Any] | None = None) -> str:
    """The report as one HTML string, secrets redacted; `quality`: an `advisor verify --json` document;
    `retrieval`: the embed, rerank and RAG rankings (`advisor.recommend.retrieval.Ranking`), a section of their own;
    `retrieval_drift`: their engines' embedding and rerank drift (`reports.retrieval_drift.drift_context`).

    Redaction runs over the report's own content only: plotly.js is put in afterwards, because minified code
    such as `z.key=function(...)` looks like a secret assignment and redacting it broke every chart."""
    if not runs:
        raise ValueError("a report needs at least one saved run; run `advisor bench` first")
    rec = recommendation or RecommendationResult(None, "no constraints were given")
    chosen = shown_runs(runs, rec)  # what `advisor recommend` ranks: charts and costs show these runs only
    if not chosen.included:
        raise ValueError(f"no run to report: {'; '.join(x.line() for x in chosen.left_out)}")
    every, runs = runs, chosen.included
    prices = price_runs(runs) if prices is None else {r.run_id: prices[r.run_id] for r in runs if r.run_id in prices}
    ctx = build_context(runs, prices, rec, sweeps, usd_per_kwh)
    ctx["left_out"] = left_out_rows(chosen, every)
    # each chart's box is given its figure's height: plotly's resize on a window change fits the figure to its box
    figures = [{"id": f.id, "title": f.title, "json": figure_json(f.figure), "height": f.figure.layout.height or 400}
               for f in report_figures(runs, prices)]
    generated = generated_utc or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    html = environment().get_template("report.html.j2").render(
        **ctx, figures=figures, title=title, generated_utc=generated, version=__version__,
        plotly_js=_PLOTLY_SLOT, max_rows=MAX_RECOMMENDATION_ROWS,
        quality=quality_context(quality) if quality else None, retrieval=list(retrieval),
        retrieval_drift=retrieval_drift or {"tables": [], "by_run": {}})
    head, slot, tail = redact_text(html).partition(_PLOTLY_SLOT)
    assert slot, "the report template lost its plotly.js slot"
    return head + _plotly_js() + tail


_PLOTLY_SLOT = "/*advisor:plotly.js*/"


@cache
def _plotly_js() -> str:
    js = get_plotlyjs()
    assert "</script" not in js.lower(), "plotly.js would end its own <script> element"
    return js


def write_report(path: Path, runs: Sequence[RunResult], **kwargs: Any) -> Path:
    """Render and write the report; returns the path written."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, render_report(runs, **kwargs))  # redacted there: one redaction for every file advisor writes
    return path

