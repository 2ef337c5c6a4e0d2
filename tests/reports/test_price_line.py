"""The report's first screen names the price its dollar figures scale with: source, date, and unverified."""

from __future__ import annotations

import re
import socket

from advisor.recommend import Constraints
from advisor.store import list_runs
from reports.costs import price_runs
from reports.html import render_report
from reports.selection import make_recommendation
from tests.advisor.recommend.h200 import H200_DIR


def test_the_headline_and_risks_name_the_unverified_h200_price(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    runs = list_runs(H200_DIR)
    rec = make_recommendation(runs, Constraints(scenario="chat", ttft_ms=800, peak_rps=20, budget_usd_month=20000))
    html = render_report(runs, prices=price_runs(runs), recommendation=rec, generated_utc="t")
    summary = html[html.index('<section id="summary">'):]
    summary = summary[: summary.index("</section>")]
    decision, risks = summary.split("<h3>Risks</h3>")
    price = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", decision.split('<p class="price">')[1].split("</p>")[0]))
    assert price.startswith("Price (unverified): $4.54/h per h200, spheron.network blog")
    assert "2026-03-17" in price and "every dollar figure scales with it" in price
    assert "price (unverified): $4.54/h per h200" in risks
