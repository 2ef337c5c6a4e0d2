"""The plotly figures of saved runs: the one module the HTML report and the dashboard both draw from.

Every figure takes saved `RunResult`s (and, for cost, `reports.costs.RunPrice`s)
and only draws numbers the runs already hold; per-request values for CDFs come
from the metric registry (`advisor.metrics.registry`), as the summary's do, so a CDF and the summary agree by
construction. All untrusted text goes through `labels.chart_text`. Runs that are
not VALID are drawn with an open "x" marker or hatched bars and "[STATUS]" in their
label, wherever they appear.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative, sample_colorscale
from plotly.subplots import make_subplots

from advisor.metrics.distribution import Distribution, percentile_key
from advisor.metrics.registry import HEADLINE, METRIC_BY_KEY, Metric
from advisor.metrics.summary import SLO_METRICS
from advisor.recommend.pareto import non_dominated
from advisor.run.rates import load_rps
from advisor.saved.store import RunResult, StoreError
from advisor.telemetry.record import TelemetrySummary
from reports.costs import RunPrice
from reports.labels import chart_text, group_key, is_valid, run_labels, scenario_name

PERCENTILES = (50.0, 90.0, 95.0, 99.0)
# the percentile bars: the metrics an SLO can limit (each with its limit drawn); the CDF and load charts: the
# registry's headline metrics (`Metric.headline`)
SLO_CHARTED: tuple[Metric, ...] = tuple(METRIC_BY_KEY[key] for _, key in SLO_METRICS)
_HEIGHT = 400
_COST_SCALE = "Viridis_r"


@dataclass(frozen=True)
class NamedFigure:
    """A figure with a stable id (for HTML anchors and tests) and a plain-text title."""

    id: str
    title: str
    figure: go.Figure


def _layout(fig: go.Figure, title: str, height: int = _HEIGHT, legend_title: str = "") -> go.Figure:
    fig.update_layout(title=chart_text(title), template="plotly_white", height=height,
                      margin={"l": 60, "r": 20, "t": 60, "b": 50}, hoverlabel={"namelength": -1},
                      showlegend=True,  # plotly hides a one-trace legend; a reader still needs the run's name
                      legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "title": {"text": legend_title}})
    return fig


def colors(keys: Sequence[str]) -> dict[str, str]:
    """One fixed colour per run (or group), so a run has the same colour in every panel and chart."""
    palette = qualitative.Plotly + qualitative.D3
    return {k: palette[i % len(palette)] for i, k in enumerate(dict.fromkeys(keys))}


def _marker(run: RunResult, color: str) -> dict:
    return {"color": color} if is_valid(run) else {"color": color, "pattern": {"shape": "/"}}


def _slo(run: RunResult, key: str) -> float | None:
    value = getattr(run.slos, key)
    return None if value is None else float(value)


def _slo_limits(runs: Sequence[RunResult], key: str) -> dict[float, list[str]]:
    """Each distinct SLO limit of `key` among the runs, with the scenarios that set it."""
    limits: dict[float, list[str]] = {}
    for run in runs:
        if (limit := _slo(run, key)) is not None:
            names = limits.setdefault(limit, [])
            if scenario_name(run) not in names:
                names.append(scenario_name(run))
    return dict(sorted(limits.items()))


def _slo_lines(fig: go.Figure, limits: dict[float, list[str]], col: int, vertical: bool) -> None:
    """One dashed red line per distinct SLO limit in subplot `col`, each with one label that no other label covers.

    Labels of vertical lines sit at the top of their line, each a row lower than the last; labels of
    horizontal lines sit on their line, each in its own slice of the plot's width. So two limits close
    together (1,000 and 2,000 ms on a 40,000 ms axis) still read as two labels."""
    ref = "" if col == 1 else str(col)
    n = len(limits)
    for i, (limit, scenarios) in enumerate(limits.items()):
        text = f"SLO {limit:,.0f} ms" if limit >= 10 else f"SLO {limit:g} ms"
        hover = chart_text(f"SLO {limit:g} ms of {', '.join(scenarios)}")
        style = {"text": text, "hovertext": hover, "showarrow": False, "font": {"size": 11, "color": "#b71c1c"},
                 "bgcolor": "rgba(255,255,255,0.85)", "name": "slo"}
        if vertical:
            fig.add_vline(x=limit, line_dash="dash", line_color="red", row=1, col=col)
            fig.add_annotation(x=limit, xref=f"x{ref}", y=1, yref=f"y{ref} domain", xanchor="left", yanchor="top",
                               yshift=-20 * i, **style)
        else:
            fig.add_hline(y=limit, line_dash="dash", line_color="red", row=1, col=col)
            fig.add_annotation(x=i / n, xref=f"x{ref} domain", y=limit, yref=f"y{ref}", xanchor="left",
                               yanchor="bottom", **style)


def _title(m: Metric) -> str:
    return f"{m.header} ({m.unit})"


def _at_slo_percentile(run: RunResult, key: str) -> float | None:
    """The run's `key` distribution at its own SLO percentile."""
    dist: Distribution = getattr(run.summary, key)
    return dist.at(run.slos.percentile)


def percentiles_figure(runs: Sequence[RunResult]) -> go.Figure:
    """TTFT, TPOT and E2E percentiles (p50..p99) per run, as grouped bars with n in the hover."""
    labels = run_labels(runs)
    color = colors([r.run_id for r in runs])
    fig = make_subplots(rows=1, cols=len(SLO_CHARTED), subplot_titles=[_title(m) for m in SLO_CHARTED])
    for col, key in enumerate((m.key for m in SLO_CHARTED), start=1):
        for run in runs:
            d: Distribution = getattr(run.summary, key)
            qs = [q for q in PERCENTILES if d.at(q) is not None]
            fig.add_bar(x=[percentile_key(q) for q in qs], y=[d.at(q) for q in qs], name=chart_text(labels[run.run_id]),
                        legendgroup=chart_text(run.run_id),
                        showlegend=col == 1, marker=_marker(run, color[run.run_id]), row=1, col=col,
                        hovertemplate=f"%{{x}}: %{{y:.4g}} ms (n={d.n})<extra>%{{fullData.name}}</extra>")
        _slo_lines(fig, _slo_limits(runs, key), col, vertical=False)
    return _layout(fig, "Latency percentiles per run (missing bars: n too small for that percentile)", legend_title="run:")


def measured_values(run: RunResult, key: str) -> list[float]:
    """Per-request values of one metric over the run's successful measured requests (what its summary used)."""
    m = METRIC_BY_KEY[key]
    return sorted(v for r in run.records() if not r.warmup and r.ok for v in m.values(r))


def cdf_figure(runs: Sequence[RunResult]) -> go.Figure:
    """Empirical CDFs of the headline metrics (TTFT, TPOT) per run, with each run's SLO limit as a dashed line."""
    labels = run_labels(runs)
    color = colors([r.run_id for r in runs])
    fig = make_subplots(rows=1, cols=len(HEADLINE), subplot_titles=[_title(m) for m in HEADLINE])
    for col, m in enumerate(HEADLINE, start=1):
        key = m.key
        for run in runs:
            try:
                values = measured_values(run, key)
            except StoreError:  # a result.json without its records: the CDF is left out, the rest still draws
                values = []
            n = len(values)
            fig.add_scatter(x=values, y=[(i + 1) / n for i in range(n)], mode="lines", line_shape="hv", row=1, col=col,
                            name=chart_text(labels[run.run_id]), legendgroup=chart_text(run.run_id), showlegend=col == 1,
                            line={"dash": "solid" if is_valid(run) else "dot", "color": color[run.run_id]},
                            hovertemplate=f"%{{x:.4g}} {m.unit}: %{{y:.1%}} of requests<extra>%{{fullData.name}}</extra>")
        _slo_lines(fig, _slo_limits(runs, key), col, vertical=True)
        fig.update_xaxes(title_text=m.unit, row=1, col=col)
    fig.update_yaxes(tickformat=".0%")
    fig.update_yaxes(title_text="fraction of requests", row=1, col=1)
    return _layout(fig, "Latency CDF per run (successful measured requests)", legend_title="run:")


def load_figure(runs: Sequence[RunResult]) -> go.Figure:
    """The headline metrics (TTFT, TPOT) at the SLO percentile against load, one line per engine x model x scenario,
    SLOs dashed."""
    fig = make_subplots(rows=1, cols=len(HEADLINE), subplot_titles=[_title(m) for m in HEADLINE])
    groups: dict[tuple[str, str, str], list[RunResult]] = {}
    for run in runs:
        if load_rps(run) is not None:
            groups.setdefault(group_key(run), []).append(run)
    color = colors([" · ".join(k) for k in groups])
    for col, key in enumerate((m.key for m in HEADLINE), start=1):
        for gkey, members in groups.items():
            members = sorted(members, key=lambda r: load_rps(r) or 0.0)
            ys = [_at_slo_percentile(run, key) for run in members]
            fig.add_scatter(x=[load_rps(r) for r in members], y=ys, mode="lines+markers", row=1, col=col,
                            name=chart_text(" · ".join(gkey)), legendgroup=chart_text(" · ".join(gkey)), showlegend=col == 1,
                            marker={"symbol": ["circle" if is_valid(r) else "x-open" for r in members], "size": 10},
                            line={"color": color[" · ".join(gkey)]},
                            text=[chart_text(f"{r.run_id} [{r.verdict.status}]") for r in members],
                            hovertemplate="%{x:.3g} req/s: %{y:.4g} ms<br>%{text}<extra>%{fullData.name}</extra>")
        _slo_lines(fig, _slo_limits([r for m in groups.values() for r in m], key), col, vertical=False)
        fig.update_xaxes(title_text="load (req/s offered)", row=1, col=col)
        fig.update_yaxes(title_text="ms at the SLO percentile", row=1, col=col)
    return _layout(fig, f"{' and '.join(m.header for m in HEADLINE)} against load (x: run not VALID)")


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both axes (both maximised), by x.

    The recommender's dominance rule (advisor.recommend.pareto), on negated axes.
    """
    front = non_dominated([(-x, -y) for x, y in points])
    return sorted(front, key=lambda i: points[i][0])


def pareto_figure(runs: Sequence[RunResult], prices: dict[str, RunPrice] | None = None) -> go.Figure:
    """Throughput (output tokens/s) against interactivity (p50 tokens/s/user), coloured by $/1M output tokens;
    the frontier is drawn through VALID runs only (a run not VALID is drawn, flagged, and sets none)."""
    labels = run_labels(runs)
    prices = prices or {}
    pts, kept = [], []
    for run in runs:
        x = run.summary.interactivity_tps.at(50)
        y = run.summary.output_tokens_per_s
        if x is not None and y is not None:
            pts.append((float(x), float(y)))
            kept.append(run)
    costs = [_usd_out(prices.get(r.run_id)) for r in kept]
    known = [c for c in costs if c is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 0.0)
    color = colors([r.run_id for r in kept])
    fig = go.Figure()
    for run, (x, y), cost in zip(kept, pts, costs):  # one trace per run, so the legend names each run
        if not known:
            dot = color[run.run_id]
        else:  # colour is the cost, drawn as a plain colour so the legend's marker matches the point
            dot = "#bbb" if cost is None else sample_colorscale(_COST_SCALE, (cost - lo) / (hi - lo) if hi > lo else 0.5)[0]
        fig.add_scatter(
            x=[x], y=[y], mode="markers", name=chart_text(labels[run.run_id]),
            marker={"size": 14, "color": dot, "symbol": "circle" if is_valid(run) else "x-open"},
            customdata=["n/a" if cost is None else f"${cost:.3g}"],
            hovertemplate="%{fullData.name}<br>%{x:.3g} tok/s/user, %{y:.4g} tok/s<br>%{customdata} per 1M output "
                          "tokens<extra></extra>")
    if known:  # the colour bar alone: a trace with no points, left out of the legend
        fig.add_scatter(x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
                        marker={"color": [lo, hi], "colorscale": _COST_SCALE, "cmin": lo, "cmax": hi,
                                "showscale": True, "colorbar": {"title": {"text": "$/1M out"}}})
    valid = [i for i, r in enumerate(kept) if is_valid(r)]  # as the recommender's frontier: only VALID runs set it
    front = [valid[i] for i in pareto_front([pts[i] for i in valid])]
    if len(front) > 1:
        fig.add_scatter(x=[pts[i][0] for i in front], y=[pts[i][1] for i in front], mode="lines",
                        name="Pareto frontier", line={"dash": "dot", "color": "grey"}, hoverinfo="skip")
    fig.update_xaxes(title_text="interactivity: p50 tokens/s per user")
    fig.update_yaxes(title_text="throughput: output tokens/s")
    colour = "$/1M output tokens, grey: no price" if known else "run"
    return _layout(fig, f"Throughput vs interactivity (Pareto frontier dotted; colour: {colour})", legend_title="run:")


def _usd_out(price: RunPrice | None) -> float | None:
    return price.cost.measured.output_usd if price and price.cost else None


def _bar_height(runs: Sequence[RunResult]) -> int:
    return max(_HEIGHT, 160 + 70 * len(runs))


def cost_figure(runs: Sequence[RunResult], prices: dict[str, RunPrice]) -> go.Figure:
    """$/1M tokens per run: output, total and blended, at the measured throughput and at the SLO point."""
    labels = run_labels(runs)
    fig = go.Figure()
    kinds = (("output_usd", "output"), ("total_usd", "total"), ("blended_usd", "blended 3:1"))
    for basis in ("measured", "at_slo"):
        for field, kind in kinds:
            xs, ys = [], []
            for run in runs:
                price = prices.get(run.run_id)
                cpm = getattr(price.cost, basis) if price and price.cost else None
                value = getattr(cpm, field) if cpm else None
                if value is not None:
                    ys.append(chart_text(labels[run.run_id]))
                    xs.append(value)
            fig.add_bar(x=xs, y=ys, orientation="h", name=f"{kind} ({'measured' if basis == 'measured' else 'at SLO'})",
                        hovertemplate="%{y}<br>$%{x:.4g} per 1M tokens<extra>%{fullData.name}</extra>")
    if not any(p.cost for p in prices.values()):
        _note(fig, "no price known for these runs' hardware: cost not shown")
    fig.update_xaxes(title_text="USD per 1M tokens (log scale)", type="log")
    fig.update_yaxes(automargin=True)
    return _layout(fig, "Cost per 1M tokens", height=_bar_height(runs))


def memory_energy_figure(runs: Sequence[RunResult]) -> go.Figure:
    """Peak and steady host RSS, GPU memory and GPU energy per output token, per run."""
    labels = run_labels(runs)
    fig = make_subplots(rows=1, cols=2, subplot_titles=["memory (MiB)", "energy (J per output token)"],
                        shared_yaxes=True, horizontal_spacing=0.04)
    series: tuple[tuple[Callable[[TelemetrySummary], Any], str], ...] = (
        (lambda t: t.rss_peak_mb, "host RSS peak"), (lambda t: t.rss_steady_mb, "host RSS steady"),
        (lambda t: (t.gpu or {}).get("memory_used_peak_mb"), "GPU memory peak"))
    for get, name in series:
        xs, ys = [], []
        for run in runs:
            value = _number(get(run.telemetry))
            if value is not None:
                ys.append(chart_text(labels[run.run_id]))
                xs.append(value)
        fig.add_bar(x=xs, y=ys, orientation="h", name=name, row=1, col=1,
                    hovertemplate="%{y}<br>%{x:.4g} MiB<extra>%{fullData.name}</extra>")
    xs, ys = [], []
    for run in runs:
        value = _number((run.telemetry.gpu or {}).get("j_per_output_token"))
        if value is not None:
            ys.append(chart_text(labels[run.run_id]))
            xs.append(value)
    fig.add_bar(x=xs, y=ys, orientation="h", name="GPU J/output token", row=1, col=2,
                hovertemplate="%{y}<br>%{x:.4g} J/token<extra></extra>")
    if not xs:
        reasons = sorted({str(r.telemetry.gpu_absent_reason or "no GPU energy counter") for r in runs})
        fig.add_annotation(text=chart_text("not measured:") + "<br>" + "<br>".join(chart_text(x) for x in reasons),
                           xref="x2 domain", yref="y2 domain", x=0.5, y=0.5, showarrow=False,
                           font={"size": 12, "color": "#666"})
    fig.update_yaxes(automargin=True)
    return _layout(fig, "Memory and energy", height=_bar_height(runs))


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _note(fig: go.Figure, text: str, x: float = 0.5) -> None:
    fig.add_annotation(text=chart_text(text), xref="paper", yref="paper", x=x, y=0.5, showarrow=False,
                       font={"size": 13, "color": "#666"})


def report_figures(runs: Sequence[RunResult], prices: dict[str, RunPrice]) -> list[NamedFigure]:
    """Every chart of the report, in order."""
    return [
        NamedFigure("fig-percentiles", "Latency percentiles", percentiles_figure(runs)),
        NamedFigure("fig-cdf", "Latency CDFs", cdf_figure(runs)),
        NamedFigure("fig-load", "TTFT and TPOT against load", load_figure(runs)),
        NamedFigure("fig-pareto", "Throughput vs interactivity", pareto_figure(runs, prices)),
        NamedFigure("fig-cost", "Cost per 1M tokens", cost_figure(runs, prices)),
        NamedFigure("fig-memory", "Memory and energy", memory_energy_figure(runs)),
    ]
