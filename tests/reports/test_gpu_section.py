"""The report's GPU section on the real H200 runs, and served/multi-GPU runs priced on the right hardware."""

from __future__ import annotations

import dataclasses
import re

import pytest

from advisor.recommend import Constraints
from advisor.saved.store import list_runs
from reports.costs import price_runs
from reports.gpu import energy_usd_per_1m, gpu_table
from reports.html import render_report
from reports.selection import make_recommendation
from tests.advisor.recommend.h200 import CHAT, H200_DIR


@pytest.fixture(scope="module")
def h200_runs():
    return list_runs(H200_DIR)


def test_gpu_table_has_the_buyers_figures(h200_runs):
    t = gpu_table(h200_runs, {r.run_id: r.run_id for r in h200_runs}, usd_per_kwh=0.20)
    row = next(r for r in t["rows"] if r["run_id"] == CHAT)
    assert "H200" in row["gpu"] and row["mem_total_mb"] == 143771.0 and row["mem_peak_mb"] == pytest.approx(13589.875)
    assert row["power_mean_w"] == pytest.approx(244.72, abs=0.01) and row["power_max_w"] == pytest.approx(312.268)
    assert row["util_pct"] == pytest.approx(49.33, abs=0.01) and row["bound"] == "host-bound"
    # 0.21506 J/token x 1e6 tokens / 3.6e6 J/kWh x $0.20/kWh
    assert row["energy_usd_per_1m_out"] == pytest.approx(0.21505964530449465 * 1e6 / 3.6e6 * 0.20)
    assert energy_usd_per_1m(None, 0.2) is None
    assert t["price_source"] == "given with --usd-per-kwh"
    default = gpu_table(h200_runs, {})
    assert default["usd_per_kwh"] == 0.12 and "electricity" in default["price_source"]


def test_first_screen_names_the_h200_and_its_measured_cost(h200_runs, monkeypatch):
    import socket

    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    rec = make_recommendation(h200_runs, Constraints(scenario="chat", ttft_ms=800, peak_rps=20, budget_usd_month=20000))
    html = render_report(h200_runs, prices=price_runs(h200_runs), recommendation=rec, generated_utc="t")
    summary = html[html.index('<section id="summary">'):]
    summary = re.sub(r"<[^>]+>", " ", summary[: summary.index("</section>")])
    assert "NVIDIA H200" in summary and "$19,874/month" in summary and "measured" in summary
    assert '<section id="gpu">' in html and "host-bound" in html


def test_served_and_eight_gpu_runs_are_priced_on_their_hardware(h200_runs):
    run = next(r for r in h200_runs if r.run_id == CHAT)
    served = dataclasses.replace(run, run_id="served", engine=dataclasses.replace(run.engine, adapter="openai",
                                                                                   format="server"))
    eight = dataclasses.replace(run, run_id="eight", manifest={
        **run.manifest, "hardware": {**run.manifest["hardware"], "gpus": run.manifest["hardware"]["gpus"] * 8}})
    prices = price_runs([run, served, eight])
    assert prices["served"].usd_per_hour is None and "--server-hardware" in prices["served"].source
    assert prices["eight"].usd_per_hour == pytest.approx(8 * prices[CHAT].usd_per_hour)


def test_dashboard_shows_the_same_gpu_figures(h200_runs):
    from reports.dashboard.data import gpu_rows

    rows, note = gpu_rows(h200_runs)
    chat = next(r for r in rows if "chat @ 5.55" in r["run"])
    assert chat["memory peak / total MiB"] == "13,590 / 143,771" and chat["bound"] == "host-bound"
    assert chat["J / output token"] == "0.215" and "$0.12/kWh" in note
