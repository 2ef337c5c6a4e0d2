"""The HTML report: self-contained, every section, hostile names shown as text, invalid runs flagged."""

from __future__ import annotations

import json
import re

import pytest
from plotly.offline import get_plotlyjs

from reports.costs import price_runs
from reports.html import render_report
from reports.selection import RecommendationResult, make_recommendation
from tests.reports.make_runs import EVIL

SECTIONS = ("summary", "recommendation", "comparison", "charts", "methodology", "environment")


@pytest.fixture(scope="module")
def html(saved_runs) -> str:
    # the hostile run has a scenario of its own, and a recommendation is for one scenario's runs
    copilot = [r for r in saved_runs if r.scenario_name == "copilot"]
    return render_report(saved_runs, prices=price_runs(saved_runs, usd_per_hour=2.0),
                         recommendation=make_recommendation(copilot))


def _figures(html: str) -> dict[str, dict]:
    blocks = re.findall(r'<script type="application/json" id="(fig-[a-z]+)-data">(.*?)</script>', html, re.S)
    return {fid: json.loads(text) for fid, text in blocks}


def test_report_is_one_self_contained_file(html):
    # plotly.js inlined once, not per figure, and byte for byte: redaction once rewrote `z.key=function(...)`
    # inside it, and no chart drew
    assert html.count(get_plotlyjs()) == 1
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html, re.I)  # nothing fetched at view time
    assert "@media print" in html


def test_secrets_in_the_report_content_are_redacted(saved_runs, monkeypatch):
    from advisor.saved import redact
    monkeypatch.setattr(redact, "_remembered", {"sk-live-in-a-run-name"})
    run = saved_runs[0]
    page = render_report([run], prices=price_runs([run], usd_per_hour=1.0), title="sk-live-in-a-run-name")
    assert "sk-live-in-a-run-name" not in page and redact.HIDDEN in page
    assert page.count(get_plotlyjs()) == 1


def test_report_has_every_section_and_chart(html):
    for section in SECTIONS:
        assert f'<section id="{section}">' in html
    figs = _figures(html)
    assert set(figs) == {"fig-percentiles", "fig-cdf", "fig-load", "fig-pareto", "fig-cost", "fig-memory"}
    assert all(f["data"] for f in figs.values())
    assert html.count('<div class="chart"') == len(figs)


def test_hostile_names_are_text_never_markup(html):
    assert EVIL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown, as text, in tables and lists
    figure_text = json.dumps(_figures(html))
    assert "<script" not in figure_text
    assert "&lt;script&gt;alert(1)" in figure_text  # plotly shows the entity as "<script>"


def test_runs_that_are_not_valid_are_flagged(saved_runs, html):
    flagged = [r for r in saved_runs if r.verdict.status != "VALID"]
    assert flagged and len(flagged) < len(saved_runs)
    assert f"{len(flagged)} of {len(saved_runs)} runs are not VALID" in html
    assert html.count('<tr class="notvalid">') >= 2 * len(flagged)  # comparison table and verdicts table
    for run in flagged:
        for reason in run.verdict.reasons:
            assert reason.replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;") in html


def test_executive_summary_names_the_recommended_option_and_its_cost(html):
    summary = html.split('<section id="summary">')[1].split("</section>")[0]
    assert "Recommended:" in summary and ("/month" in summary or "cost not headlined (price from memory" in summary)
    assert "Risks" in summary
    methodology = html.split('<section id="methodology">')[1].split("</section>")[0]
    assert "Estimated or assumed, not measured" in methodology and "early stopping" in methodology


def test_ranking_rows_have_one_short_reason_and_their_details_folded(html):
    table = html.split('<table id="ranking">')[1].split("</table>")[0]
    for cell in re.findall(r'<td class="why">(.*?)<details>', table, re.S):
        assert "\n" not in cell.strip() and len(cell.strip()) < 220
    assert table.count("<details><summary>details</summary>") == table.count("<tr class=")


def test_without_recommendation_the_report_says_what_to_give(saved_runs):
    page = render_report(saved_runs[:1], prices=price_runs(saved_runs[:1], usd_per_hour=1.0),
                         recommendation=RecommendationResult(None, "no constraints were given"))
    assert "No recommendation: no constraints were given" in page
    assert "--constraints FILE.yaml" in page


def test_a_report_needs_runs():
    with pytest.raises(ValueError, match="advisor bench"):
        render_report([])


def test_a_run_without_its_request_records_still_renders(saved_runs, tmp_path):
    from advisor.saved.store import RESULT_FILE, load_run

    folder = tmp_path / saved_runs[0].run_id
    folder.mkdir()
    (folder / RESULT_FILE).write_text((saved_runs[0].path / RESULT_FILE).read_text())
    page = render_report([load_run(folder)], prices=price_runs(saved_runs[:1], usd_per_hour=1.0))
    assert '<div class="chart" id="fig-cdf"' in page


def test_a_recommendation_without_any_latency_slo_says_so_first_among_the_risks(saved_runs):
    from advisor.saved.store import RunResult

    no_slo = []
    for r in (r for r in saved_runs if r.scenario_name == "copilot"):
        d = r.to_dict()
        d["slos"].update(ttft_ms=None, tpot_ms=None, e2e_ms=None)
        no_slo.append(RunResult.from_dict(d))
    page = render_report(no_slo, prices=price_runs(no_slo, usd_per_hour=1.0), recommendation=make_recommendation(no_slo))
    risks = page.split('<section id="summary">')[1].split("</section>")[0].split("Risks")[1]
    assert "no latency SLO" in risks.split("</li>")[0]


def test_runs_of_several_scenarios_get_no_recommendation_and_say_how_to_get_one(saved_runs):
    rec = make_recommendation(saved_runs)  # copilot and the hostile scenario
    assert rec.recommendation is None
    assert rec.reason.startswith("the runs are of 2 scenarios (") and "scenario: NAME" in rec.reason


def test_a_run_without_slos_shows_no_goodput_or_attainment(saved_runs):
    # with no limit every completed request is "good": 100% attainment and goodput = throughput said nothing
    from advisor.saved.store import RunResult

    run = next(r for r in saved_runs if r.scenario_name == "copilot")
    d = run.to_dict()
    d["slos"].update(ttft_ms=None, tpot_ms=None, e2e_ms=None)
    no_slo = RunResult.from_dict(d)
    page = render_report([no_slo], prices=price_runs([no_slo], usd_per_hour=1.0))
    options = page.split('<table id="options">')[1].split("</table>")[0]
    per_run = page.split("Every run on its own")[1].split("</table>")[0]
    assert options.count("<td>no SLO</td>") == 1
    assert per_run.count("<td>no SLO</td>") == 2 and "100.0%" not in per_run
    assert "SLOs: none set (no goodput, SLO verdict or latency-bound capacity" in page  # the scenario's section
    with_slo = render_report([run], prices=price_runs([run], usd_per_hour=1.0))
    assert "SLOs: none set" not in with_slo
    assert "no SLO" not in with_slo.split("Every run on its own")[1].split("</table>")[0]


def test_memory_is_labelled_mib(html):
    # RSS and GPU memory are bytes / 2**20; labelled "MB" they read 4.9% low against datasheet GB
    assert "<th>RSS peak MiB</th>" in html and "memory (MiB)" in html and " MB<" not in html
