"""The HTML report in headless Chromium: loads offline with no console error, every chart drawn, names as text."""

from __future__ import annotations

import pytest

from reports.costs import price_runs
from reports.html import write_report
from reports.selection import make_recommendation
from tests.browser.conftest import shot
from tests.reports.make_runs import EVIL

pytestmark = pytest.mark.browser


def test_report_opens_offline_with_every_chart_drawn(page, browser_runs, artifacts):
    _, runs = browser_runs
    copilot = [r for r in runs if r.scenario_name == "copilot"]  # a recommendation is for one scenario
    path = write_report(artifacts / "report.html", runs, prices=price_runs(runs, usd_per_hour=2.0),
                        recommendation=make_recommendation(copilot))
    page.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:") else route.continue_())
    page.goto(path.as_uri())
    charts = page.locator("div.chart")
    n = charts.count()
    assert n == 6
    for i in range(n):  # plotly draws an <svg class="main-svg"> into each chart it rendered
        charts.nth(i).locator(".main-svg").first.wait_for(state="attached", timeout=20_000)
    page.wait_for_timeout(500)
    shot(page, artifacts, "report")
    assert page.errors == []
    assert page.dialogs == []
    body = page.locator("body").inner_text()
    assert EVIL in body  # shown as the literal characters
    legend = page.locator("#fig-percentiles .legendtext").all_text_contents()  # SVG: no inner_text
    assert any(EVIL in t for t in legend)  # and in chart legends, as text
    assert page.evaluate("Array.from(document.scripts).filter(s => s.textContent.trim().startsWith('alert')).length") == 0


def test_report_prints_to_pdf(page, browser_runs, artifacts):
    _, runs = browser_runs
    path = write_report(artifacts / "report-print.html", runs[:2], prices=price_runs(runs[:2], usd_per_hour=2.0))
    page.goto(path.as_uri())
    page.locator("#fig-memory .main-svg").first.wait_for(state="attached", timeout=20_000)
    pdf = artifacts / "report.pdf"
    page.pdf(path=str(pdf), format="A4", landscape=True, print_background=True)
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 50_000


def _above_the_fold(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 800


@pytest.mark.parametrize("which", ["recommended", "no_trust"])
def test_first_screen_at_1280x800_shows_the_decision_and_its_cost(page, browser_runs, artifacts, which):
    _, runs = browser_runs
    chosen = runs if which == "recommended" else [r for r in runs if r.verdict.status != "VALID"]
    one_scenario = [r for r in chosen if r.scenario_name == "copilot"]  # a recommendation is for one scenario
    path = write_report(artifacts / f"report-{which}.html", chosen, prices=price_runs(chosen, usd_per_hour=2.0),
                        recommendation=make_recommendation(one_scenario))
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(path.as_uri())
    page.locator("#fig-percentiles .main-svg").first.wait_for(state="attached", timeout=20_000)
    assert page.evaluate("window.scrollY") == 0
    shot(page, artifacts, f"first-screen-{which}")
    assert _above_the_fold(page, "#summary h2")
    assert _above_the_fold(page, "#decision .headline")
    headline = page.locator("#decision .headline").inner_text()
    if which == "recommended":
        assert headline.startswith("Recommended:") and "/month" in headline
        assert _above_the_fold(page, "#decision .cost")
    else:
        assert headline.startswith("No trustworthy recommendation yet.")
        assert _above_the_fold(page, "#decision pre.cmd")  # the first command that would fix it
    assert _above_the_fold(page, "#summary .risks li")
    assert page.errors == []


def test_h200_report_first_screen_names_the_gpu_and_its_measured_cost(page, artifacts, monkeypatch):
    """Issue 26: on the real H200 runs (host also named `vm`), the first screen names the H200 and its cost."""
    import socket

    from advisor.recommend import Constraints
    from advisor.store import list_runs
    from tests.advisor.recommend.h200 import H200_DIR

    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    runs = list_runs(H200_DIR)
    rec = make_recommendation(runs, Constraints(scenario="chat", ttft_ms=800, peak_rps=20, budget_usd_month=20000))
    path = write_report(artifacts / "report-h200.html", runs, prices=price_runs(runs), recommendation=rec)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(path.as_uri())
    shot(page, artifacts, "report-h200")
    decision = page.locator("#summary").inner_text()
    assert "NVIDIA H200" in decision and "$19,874/month" in decision and "host-bound" in decision
    assert _above_the_fold(page, "#decision")
    assert page.errors == []
