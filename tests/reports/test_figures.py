"""Figures shared by the report and the dashboard draw what the runs hold, and escape names."""

from __future__ import annotations

import json

import numpy as np

from reports import figures
from reports.costs import price_runs
from reports.labels import chart_text


def test_cdf_uses_the_same_requests_as_the_summary(saved_runs):
    for run in saved_runs:
        values = figures.measured_values(run, "ttft_ms")
        d = run.summary.ttft_ms
        assert len(values) == d.n
        assert np.percentile(values, 50) == d.at(50)


def test_load_curve_joins_runs_of_one_engine_and_model_by_rising_load(saved_runs):
    fig = figures.load_figure(saved_runs)
    ttft = [t for t in fig.data if t.xaxis == "x" and "tiny-a" in t.name]
    assert len(ttft) == 1
    assert list(ttft[0].x) == sorted(ttft[0].x) and len(ttft[0].x) == 2
    shapes = [s for s in fig.layout.shapes if s.y0 == 400.0]  # the copilot p95 TTFT SLO line
    assert shapes


def test_pareto_front_keeps_points_nothing_beats_on_both_axes():
    pts = [(1.0, 10.0), (2.0, 8.0), (1.5, 7.0), (3.0, 1.0), (0.5, 9.0)]
    assert figures.pareto_front(pts) == [0, 1, 3]


def test_hostile_names_are_escaped_in_every_figure(saved_runs):
    prices = price_runs(saved_runs, usd_per_hour=1.0)
    for nf in figures.report_figures(saved_runs, prices):
        text = json.dumps(nf.figure.to_plotly_json(), default=str)
        assert "<script" not in text, nf.id
    assert chart_text("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y"


def test_cost_chart_says_when_no_price_is_known(saved_runs):
    fig = figures.cost_figure(saved_runs, {})
    assert any("no price known" in a.text for a in fig.layout.annotations)


def test_invalid_runs_are_marked_in_charts(saved_runs):
    fig = figures.percentiles_figure(saved_runs)
    names = [t.name for t in fig.data if t.showlegend]
    n_flagged = sum(1 for r in saved_runs if r.verdict.status != "VALID")
    assert sum("[INVALID]" in n or "[SATURATED]" in n for n in names) == n_flagged


def test_one_dominance_rule_for_the_report_and_the_recommender():
    from advisor.recommend.pareto import frontier
    pts = [(1.0, 10.0), (1.0, 10.0), (2.0, 8.0), (2.0, 5.0)]  # equal points are both kept; (2, 5) loses to (2, 8)
    assert figures.pareto_front(pts) == [0, 1, 2]
    keys = frontier([(str(i), -x, -y) for i, (x, y) in enumerate(pts)])  # the same points as costs
    assert sorted(keys) == ["0", "1", "2"]
