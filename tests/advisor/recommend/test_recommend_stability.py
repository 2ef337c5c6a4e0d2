"""recommend rests on one bandwidth per machine, cached with its date, and its backtest skips interrupted runs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.catalog import load_catalog
from advisor.hardware.detect import detect
from advisor.loadgen.info import LoadgenInfo
from advisor.metrics.verdict import Verdict
from advisor.recommend.candidates import MeasuredRun
from advisor.recommend.error_bars import _loo, ineligible
from tests.advisor.sizing.test_roofline import synthetic_run


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_bandwidth_is_measured_once_per_machine_and_cached_with_its_date(home, monkeypatch):
    import advisor.hardware.detect as hd

    calls = []

    def fake_measure(*a, **k) -> float:
        calls.append(1)
        return [20.0, 19.4, 18.9][len(calls) - 1]  # a real machine wobbles from call to call

    monkeypatch.setattr(hd, "measure_memory_bandwidth_gbps", fake_measure)
    catalog = load_catalog()
    first, second = detect(catalog), detect(catalog)
    assert first.measured_bw_gbps == second.measured_bw_gbps == 20.0 and len(calls) == 1
    assert (home / "bandwidth.json").is_file() and "measured_utc" in (home / "bandwidth.json").read_text()
    assert detect(catalog, remeasure=True).measured_bw_gbps == 19.4 and len(calls) == 2
    assert detect(catalog).measured_bw_gbps == 19.4


def test_the_backtest_ignores_interrupted_invalid_runs():
    h100 = load_catalog().get("h100-sxm")
    a, b = synthetic_run("a", h100, 0.4), synthetic_run("b", h100, 0.6)
    cut = synthetic_run("cut", h100, 0.05)
    cut = replace(cut, verdict=Verdict("INVALID", ("interrupted (SIGINT after 3 of 90 requests); partial",)),
                  loadgen=LoadgenInfo(interrupted="SIGINT after 3 of 90 requests"))
    assert ineligible(MeasuredRun(cut, h100)) == "verdict INVALID"  # never a calibration run nor a target
    rows = _loo([(a, h100), (b, h100)])
    assert [r.run_id for r in rows] == ["a", "b"]
    assert (abs(rows[0].ttft_error) + abs(rows[1].ttft_error)) / 2 == pytest.approx((1 / 3 + 1 / 2) / 2)
