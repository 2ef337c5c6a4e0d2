"""The report's first screen names the price its dollar figures scale with: source, date, and unverified."""

from __future__ import annotations

import re
import socket

from advisor.recommend import Constraints
from advisor.saved.store import list_runs
from reports.costs import price_runs
from reports.html import render_report
from reports.selection import make_recommendation
from tests.advisor.recommend.h200 import H200_DIR


def test_the_headline_names_the_h200_price_and_its_quotes(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    runs = list_runs(H200_DIR)
    rec = make_recommendation(runs, Constraints(scenario="chat", ttft_ms=800, peak_rps=20, budget_usd_month=20000))
    html = render_report(runs, prices=price_runs(runs), recommendation=rec, generated_utc="t")
    summary = html[html.index('<section id="summary">'):]
    summary = summary[: summary.index("</section>")]
    decision, risks = summary.split("<h3>Risks</h3>")
    price = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", decision.split('<p class="price">')[1].split("</p>")[0]))
    # two providers' quotes: the policy is met, so the price is plain and not among the risks
    assert price.startswith("Price: $5.45/h per h200, median of 2 listed prices (Spheron $4.54/h on 2026-03-17")
    assert "every dollar figure scales with it" in price and "price (unverified)" not in risks


def test_a_price_resting_on_one_provider_is_flagged_unverified():
    from advisor.catalog import load_catalog
    from advisor.recommend.render import price_line

    p = load_catalog().price("gb200")  # one provider, and per superchip: the per-GPU price derived
    assert p is not None and not p.policy_met
    line = price_line("gb200", p.usd_per_hour, p.source, p.as_of)
    assert line.startswith("price (unverified): $4.54/h per gb200, one listed price (Spheron $4.54/h (derived: "
                           "$9.08 per 2-device node / 2) on 2026-03-17), only 1 dated citable provider")
