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
    from advisor.catalog import load_catalog

    priced = load_catalog(price_flags=dict.fromkeys(load_catalog().hardware, 2.0))  # as `--price ID=2` would: a
    # price the user gives is headlined, where the catalog's from-memory CPU prices are not
    path = write_report(artifacts / f"report-{which}.html", chosen, prices=price_runs(chosen, usd_per_hour=2.0),
                        recommendation=make_recommendation(one_scenario, catalog=priced))
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
    from advisor.saved.store import list_runs
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


_SLO_BOXES = """() => Array.from(document.querySelectorAll("div.chart")).map(chart => ({
    id: chart.id,
    boxes: Array.from(chart.querySelectorAll("g.annotation")).filter(a => a.textContent.trim().startsWith("SLO"))
        .map(a => { const r = a.getBoundingClientRect(); return [a.textContent.trim(), r.left, r.top, r.right, r.bottom]; })
}))"""

_TABLES = """() => Array.from(document.querySelectorAll("table")).map(t => {
    const box = t.parentElement;
    return {section: t.closest("section").id, id: t.id, scrolls: getComputedStyle(box).overflowX === "auto",
            table: t.getBoundingClientRect().width, box: box.clientWidth, scroll_width: box.scrollWidth};
})"""


_LEGEND_CLASHES = """() => Array.from(document.querySelectorAll("div.chart")).flatMap(c => {
    const box = c.getBoundingClientRect(), svg = c.querySelector(".main-svg").getBoundingClientRect();
    const out = svg.height > box.height + 1 ? [c.id + ": drawn taller than its box, over the next chart"] : [];
    const legend = c.querySelector("g.legend");
    if (!legend) return out.concat([c.id + ": no legend"]);
    const l = legend.getBoundingClientRect();
    const axis = Array.from(c.querySelectorAll('g[class*="xtitle"] text, g[class*="xtick"] text'));
    return out.concat(axis.filter(t => { const r = t.getBoundingClientRect();
        return r.left < l.right && l.left < r.right && r.top < l.bottom && l.top < r.bottom; })
        .map(t => c.id + ": legend over the x axis's " + JSON.stringify(t.textContent)));
})"""


def _overlap(a: list, b: list) -> bool:
    return a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]


def test_charts_and_tables_read_at_1280_and_1400_px(page, browser_runs, artifacts, tmp_path, monkeypatch):
    """SLO labels of runs with different SLOs never cover each other, each run is named in the legends, no table is
    cut off, one Environment heading per machine, and the constraints in words. Screenshots: first screen at
    1280x800, the charts at 1400 px."""
    import socket

    from advisor.recommend import Constraints
    from advisor.saved.store import list_runs
    from reports.labels import run_labels
    from tests.advisor.recommend.h200 import CHAT, copy_runs, write_edited

    def on_a_cpu_box_with_tighter_slos(d: dict) -> None:
        d["manifest"]["hardware"].update(gpus=[], cpu_cores=16)
        d["manifest"]["hostname"] = "cpu-box"
        d["engine"]["device"] = "cpu"
        d["telemetry"].pop("gpu", None)
        d["slos"].update(ttft_ms=400.0, tpot_ms=40.0)

    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    mixed = copy_runs(tmp_path / "runs")  # the H200 chat runs (SLOs 2,000 / 100 ms) on host vm ...
    write_edited(mixed, CHAT, "20261126-020000-chat-own-c0c0", on_a_cpu_box_with_tighter_slos)  # ... one at 400 / 40
    runs = list_runs(mixed)
    rec = make_recommendation(runs, Constraints(scenario="chat", peak_rps=20, budget_usd_month=20000))
    path = write_report(artifacts / "report-layout.html", runs, prices=price_runs(runs), recommendation=rec)

    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(path.as_uri())
    page.locator("#fig-memory .main-svg").first.wait_for(state="attached", timeout=20_000)
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "layout-first-screen-1280x800.png"))  # the first screen only
    for width in (1280, 1400):
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(800)  # plotly redraws responsive charts on resize
        charts = page.evaluate(_SLO_BOXES)
        labels = {c["id"]: [b[0].replace(",", "") for b in c["boxes"]] for c in charts}
        assert "SLO 400 ms" in labels["fig-cdf"] and "SLO 2000 ms" in labels["fig-cdf"], labels
        boxes = [b for c in charts for b in c["boxes"]]
        clashes = [(a[0], b[0]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if _overlap(a, b)]
        assert clashes == [], f"SLO labels print on top of each other at {width} px: {clashes}"
        assert page.evaluate(_LEGEND_CLASHES) == [], width
        for t in page.evaluate(_TABLES):  # each table fits its box, or its box scrolls (never cut off)
            assert t["scrolls"] or t["table"] <= t["box"] + 1, t
        cut = [t for t in page.evaluate(_TABLES) if t["section"] == "comparison" and t["scroll_width"] > t["box"]]
        assert width == 1280 or cut == [], f"the comparison does not fit at 1400 px: {cut}"
    page.locator("#charts").screenshot(path=str(artifacts / "layout-charts-1400.png"))
    page.locator("#comparison").screenshot(path=str(artifacts / "layout-comparison-1400.png"))
    page.locator("#environment").screenshot(path=str(artifacts / "layout-environment-1400.png"))

    names = run_labels(runs)
    for fig in ("fig-percentiles", "fig-cdf", "fig-pareto"):  # a legend entry naming each run
        legend = page.locator(f"#{fig} .legendtext").all_text_contents()
        missing = [n for n in names.values() if n not in legend]
        assert missing == [], (fig, missing)
    headings = page.locator("#environment h3").all_text_contents()
    machines = [h for h in headings if h.startswith("Machine ")]
    assert len(machines) == 2, headings  # the H200 host, and the CPU box
    assert sum(h == "Machine vm: Intel(R) Xeon(R) Processor, 16 cores, 135 GB, 1 x NVIDIA H200" for h in machines) == 1
    constraints = page.locator("#recommendation p.constraints").inner_text()
    assert constraints.startswith("Constraints: p95 TTFT <= 400 ms or 2,000 ms, each option by its runs' SLOs, p95 "
                                  "TPOT <= 40 ms or 100 ms, each option by its runs' SLOs, peak 20 req/s, budget "
                                  "$20,000/month."), constraints
    assert page.errors == []
