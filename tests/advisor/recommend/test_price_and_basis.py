"""Beside the headline: the price every dollar figure scales with, and what an uncalibrated estimate rests on."""

from __future__ import annotations

import socket

import pytest
from rich.console import Console

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from advisor.recommend.render import print_headline
from tests.advisor.recommend.h200 import CHAT, SATURATED, copy_runs, load, this_cpu_vm
from tests.advisor.recommend.runs import loaded, make_run

CHAT_SLOS = dict(scenario="chat", ttft_ms=800, peak_rps=20, budget_usd_month=20000)
# only CPU hardware allowed: no run calibrates an estimate there (the H200 runs are host-bound or SATURATED)
CPU_ONLY = dict(scenario="chat", ttft_ms=3000, tpot_ms=200, peak_rps=20, hardware=("aws-m7i-8xlarge",))


@pytest.fixture(autouse=True)
def _host_is_vm(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")


def _headline(rec) -> list[str]:
    con = Console(record=True, width=1000)
    print_headline(rec, con)
    return con.export_text().splitlines()


def test_the_headline_cost_says_which_price_it_scales_with(tmp_path):
    runs = load(copy_runs(tmp_path, (CHAT, SATURATED)))
    rec = recommend(runs, Constraints(**CHAT_SLOS), load_catalog(), detected=this_cpu_vm())
    assert rec.best is not None and rec.best.candidate.hardware_id == "h200"
    first, price = _headline(rec)[:2]
    assert first.startswith("Recommended:") and "$19,874/month" in first  # 5 x $5.445/h x 730 h
    # the catalog's price is the median of its quotes, each named with the date its page states
    assert price.strip().startswith("price: $5.45/h per h200, median of 2 listed prices (Spheron $4.54/h on "
                                    "2026-03-17, RunPod $6.35/h on 2026-03-10)")
    assert "every dollar figure scales with it" in price
    # a price given on the command line is shown as that, with no catalog date or flag
    mine = load_catalog(price_flags={"h200": 3.10})
    rec = recommend(runs, Constraints(**CHAT_SLOS), mine, detected=this_cpu_vm())
    price = _headline(rec)[1].strip()
    assert price == "price: $3.10/h per h200, --price flag; every dollar figure scales with it"


def test_no_estimate_rests_on_an_assumed_efficiency(tmp_path):
    # the H200 runs are host-bound or SATURATED: no run may calibrate the roofline, so no CPU row is made (it once
    # rested on an assumed 50% efficiency, where the H200 run reached 11%) and the notes say why, naming the runs
    runs = load(copy_runs(tmp_path, (CHAT, SATURATED)))
    for allow in (False, True):
        rec = recommend(runs, Constraints(**CPU_ONLY, allow_uncalibrated=allow), load_catalog(), detected=this_cpu_vm())
        assert rec.best is None and not [r for r in rec.rows if r.candidate.source == "estimated"]
        (line,) = [n for n in rec.notes if n.startswith("aws-m7i-8xlarge: no row for own")]
        assert "cannot be estimated" in line and f"run {CHAT}: host-bound" in line
        assert f"run {SATURATED}: SATURATED" in line and "assumed" not in line


def test_an_estimate_carried_from_cpu_runs_to_a_gpu_says_so():
    runs = [make_run("a", rps=0.2, ttft_ms=600, tpot_ms=60), make_run("b", rps=0.3, ttft_ms=500, tpot_ms=55)]
    rec = recommend(loaded(runs), Constraints(peak_rps=20, budget_usd_month=2000), load_catalog())
    gpu = [r for r in rec.rows if r.candidate.device_class == "gpu" and r.candidate.source == "estimated"]
    assert gpu and all(r.candidate.evidence == "uncalibrated" for r in gpu)
    for r in gpu:
        assert "calibrated on CPU runs only (another device class)" in r.candidate.evidence_note
        assert "assumed" not in r.candidate.evidence_note
