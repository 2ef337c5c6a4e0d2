"""The constraints line says, in words, the SLOs applied, the load and the budget; defaults stay unsaid."""

from __future__ import annotations

import socket

from advisor.recommend import Constraints
from reports.constraints_text import constraints_text
from reports.costs import price_runs
from reports.html import render_report
from reports.selection import make_recommendation


def _words(rows=(), **given) -> str:
    return constraints_text(Constraints(**given).model_dump(mode="json"), list(rows))


def test_given_slos_load_and_budget_read_as_a_sentence():
    text = _words(ttft_ms=2000, tpot_ms=100, peak_rps=20, budget_usd_month=20000)
    assert text == "p95 TTFT <= 2,000 ms, p95 TPOT <= 100 ms, peak 20 req/s, budget $20,000/month. " \
                   "Also: 20% headroom over the load."


def test_slos_left_to_the_scenario_are_the_applied_ones_and_say_where_they_came_from():
    rows = [{"ttft_ms": 2000.0, "tpot_ms": 100.0, "e2e_ms": None}] * 2
    assert _words(rows, peak_rps=20).startswith(
        "p95 TTFT <= 2,000 ms, p95 TPOT <= 100 ms (the scenario's SLOs), peak 20 req/s, no budget.")
    mixed = _words(rows, tpot_ms=50, percentile=99, avg_rps=3)
    assert mixed.startswith("p99 TTFT <= 2,000 ms (the scenario's), p99 TPOT <= 50 ms, average 3 req/s, no budget.")


def test_scenarios_with_different_slos_are_both_named():
    rows = [{"ttft_ms": 400.0}, {"ttft_ms": 2000.0}, {"ttft_ms": 400.0}]
    assert _words(rows).startswith("p95 TTFT <= 400 ms or 2,000 ms, each option by its runs' SLOs, no load given (one replica), no budget.")
    assert _words([{"tpot_ms": 100.0}]).startswith("p95 TPOT <= 100 ms (the scenario's), no load")


def test_no_slo_and_the_settings_that_differ_from_their_defaults():
    text = _words(monthly_tokens_m=500, cpu_only=True, deployment="on-prem", include_estimates=False,
                  tie_break=("margin",), max_complexity="low", scenario="chat", headroom=0.5)
    assert text == ("no latency SLO, 500M tokens/month, no budget. Also: scenario chat; on-prem deployment; "
                    "CPU only (no GPU); operational complexity at most low; 50% headroom over the load; "
                    "measured options only (no estimates); ties broken by margin.")
    assert "=" not in text and "False" not in text


def test_the_report_states_the_constraints_in_words(monkeypatch):
    from advisor.saved.store import list_runs
    from tests.advisor.recommend.h200 import H200_DIR

    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    runs = list_runs(H200_DIR)
    rec = make_recommendation(runs, Constraints(scenario="chat", peak_rps=20, budget_usd_month=20000))
    page = render_report(runs, prices=price_runs(runs), recommendation=rec)
    line = page.split('<p class="constraints">')[1].split("</p>")[0]
    assert line.startswith("Constraints: p95 TTFT &lt;= 2,000 ms, p95 TPOT &lt;= 100 ms (the scenario&#39;s SLOs), "
                           "peak 20 req/s, budget $20,000/month.")
    assert "cpu_only" not in line and "tie_break" not in line
