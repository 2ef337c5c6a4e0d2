"""The dashboard in headless Chromium: every page clicked through, screenshots saved, names shown as text."""

from __future__ import annotations

import pytest

from tests.browser.conftest import shot
from tests.reports.make_runs import EVIL

pytestmark = pytest.mark.browser
TIMEOUT_MS = 30_000


def _settle(page) -> None:
    """Wait until Streamlit has finished the current script run."""
    page.wait_for_timeout(300)
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="detached", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)


def _goto(page, name: str) -> None:
    page.locator('[data-testid="stSidebar"]').get_by_text(name, exact=True).click()
    page.get_by_role("heading", name=name if name != "Run" else "Run a benchmark").wait_for(timeout=TIMEOUT_MS)
    _settle(page)


def _choose(page, label: str, text: str) -> None:
    """Type into a multiselect or selectbox (found by its label) and pick the first match."""
    box = page.locator('[data-testid="stMultiSelect"], [data-testid="stSelectbox"]').filter(has_text=label)
    box.locator("input").first.click()
    page.keyboard.type(text)
    page.get_by_role("option").first.click()
    page.keyboard.press("Escape")
    _settle(page)


def _number(page, label: str, value: str) -> None:
    field = page.get_by_label(label, exact=True)
    field.fill(value)
    field.press("Tab")  # commits the value; Enter would also submit a form
    _settle(page)


def test_click_through_every_page(page, dashboard, browser_runs, artifacts):
    root, runs = browser_runs
    page.set_viewport_size({"width": 1400, "height": 2400})  # Streamlit scrolls inside the page: show it all
    page.goto(dashboard)
    page.get_by_role("heading", name="Runs").wait_for(timeout=TIMEOUT_MS)
    _settle(page)
    tables = page.locator('[data-testid="stTable"]')
    assert EVIL in tables.first.inner_text()  # the hostile names are table text
    _choose(page, "Selected runs", "script")  # add the hostile run to the selection
    page.get_by_text(f"{EVIL} @").first.wait_for(timeout=TIMEOUT_MS)
    shot(page, artifacts, "dashboard-1-runs")

    _goto(page, "Compare")
    page.locator(".js-plotly-plot .main-svg").nth(5).wait_for(state="attached", timeout=TIMEOUT_MS)
    assert page.locator(".js-plotly-plot").count() == 6
    assert EVIL in page.locator('[data-testid="stTable"]').first.inner_text()
    shot(page, artifacts, "dashboard-2-compare")

    _goto(page, "Recommend")
    # the runs are of two scenarios: the page opens on the one with the most runs, so on a ranking, not a refusal
    page.get_by_text("Recommended:").first.wait_for(timeout=TIMEOUT_MS)
    shot(page, artifacts, "dashboard-3-recommend")
    _number(page, "p95 TTFT limit (ms)", "0.001")
    page.get_by_text("No recommendation").first.wait_for(timeout=TIMEOUT_MS)
    _settle(page)
    shot(page, artifacts, "dashboard-4-recommend-tight")

    _goto(page, "Run")
    _choose(page, "Scenario", "chat")
    _number(page, "Rate (req/s)", "10")
    _number(page, "Duration (s)", "1")
    _number(page, "Max output tokens", "4")
    page.get_by_role("button", name="Start").click()
    page.get_by_role("heading", name="Last run").wait_for(timeout=90_000)
    _settle(page)
    assert len(list(root.glob("*/result.json"))) == len(runs) + 1  # exactly one run started
    shot(page, artifacts, "dashboard-5-run")

    with page.expect_download(timeout=60_000) as dl:
        page.locator('[data-testid="stDownloadButton"] button').click()
    report = artifacts / "dashboard-report.html"
    dl.value.save_as(str(report))
    html = report.read_text()
    assert "<section id=\"charts\">" in html and EVIL not in html and "&lt;script&gt;alert(1)" in html

    assert page.dialogs == []
    assert page.errors == []
