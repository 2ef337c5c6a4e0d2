"""Dashboard logic without Streamlit: filters, constraints from widgets, bounded runs."""

from __future__ import annotations

import pytest

from reports.dashboard import data as dash


def test_filters_combine_and_empty_filters_pass_everything(saved_runs):
    assert dash.filter_runs(saved_runs) == list(saved_runs)
    tiny = dash.filter_runs(saved_runs, scenarios=["copilot"], verdicts=["VALID"])
    assert tiny and all(r.verdict.status == "VALID" and r.scenario_name == "copilot" for r in tiny)
    assert dash.filter_runs(saved_runs, engines=["no-such-engine"]) == []


def test_zero_widgets_mean_not_set():
    d = dash.constraints_from_widgets("chat", 0.0, 40.0, 0.0, 500.0, "cloud", "low", False)
    assert d == {"scenario": "chat", "tpot_ms": 40.0, "budget_usd_month": 500.0, "deployment": "cloud",
                 "max_complexity": "low", "include_estimates": False}


def test_the_recommend_page_offers_one_scenario_at_a_time_most_runs_first(saved_runs):
    # was: "(all scenarios)" came first, and with runs of two scenarios the page opened on a refusal
    names = dash.scenarios_by_runs(saved_runs)
    assert sorted(names) == sorted({r.scenario_name for r in saved_runs})
    counts = [sum(r.scenario_name == n for r in saved_runs) for n in names]
    assert counts == sorted(counts, reverse=True)
    first = dash.recommend_runs(saved_runs, dash.constraints_from_widgets(names[0], 0, 0, 0, 0, "any", "high", True))
    assert first.recommendation is not None, first.reason


def test_dashboard_runs_are_bounded():
    with pytest.raises(ValueError, match="duration"):
        dash.RunRequest("chat", duration_s=dash.MAX_RUN_DURATION_S + 1)
    with pytest.raises(ValueError, match="rate"):
        dash.RunRequest("chat", rate_rps=0)
    with pytest.raises(ValueError, match="advisor bench"):
        dash.RunRequest("chat", engine="vllm")


def test_runs_folder_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(dash.RUNS_ENV, str(tmp_path))
    assert dash.runs_root() == tmp_path
    assert dash.load_runs(tmp_path / "missing") == []
    monkeypatch.delenv(dash.RUNS_ENV)
    assert str(dash.runs_root()) == "runs"
