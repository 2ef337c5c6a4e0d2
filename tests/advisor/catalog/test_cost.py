"""Cost per 1M tokens, replicas and monthly cost on hand-computed cases."""

from __future__ import annotations

import pytest

from advisor.catalog.cost import cost_per_million, monthly_cost_usd, replicas_needed, run_cost, usd_per_million_tokens
from advisor.metrics.summary import RunSummary


def test_formula_matches_metrics_md():
    # $3.60/h, 1 instance, 1000 tok/s: 3.6 / 3.6e6 tokens per hour * 1e6 = $1.00 per 1M
    assert usd_per_million_tokens(3.6, 1, 1000.0) == pytest.approx(1.0)
    # two instances at the same throughput cost twice as much per token
    assert usd_per_million_tokens(3.6, 2, 1000.0) == pytest.approx(2.0)
    assert usd_per_million_tokens(3.6, 1, 0.0) is None


def test_output_input_total_and_blended():
    c = cost_per_million(3.6, 1, input_tokens_per_s=3000.0, output_tokens_per_s=1000.0)
    assert c.output_usd == pytest.approx(1.0)
    assert c.input_usd == pytest.approx(1 / 3)
    assert c.total_usd == pytest.approx(0.25)
    # hourly $3.6 = $0.001/s over 3000 + 4*1000 = 7000 input-token units -> 1/7 $ per 1M input tokens;
    # output 4/7; blended 3:1 = (3/7 + 4/7) / 4 = 0.25
    assert c.blended_usd == pytest.approx(0.25)


def test_run_cost_at_slo_point_scales_with_goodput():
    # 10 req/s of 300 input and 100 output tokens each
    d = {"input_tokens_per_s": 3000.0, "output_tokens_per_s": 1000.0, "requests_per_s": 10.0, "goodput_rps": 5.0,
         "n_ok": 50, "n_in_total": 15000, "n_out_total": 5000}
    s = RunSummary.from_dict({"mode": "open", **d})
    rc = run_cost(s, usd_per_hour=3.6)
    assert rc.slo_basis == "goodput"
    assert rc.at_slo is not None and rc.at_slo.output_usd == pytest.approx(2.0)  # half the good throughput, twice the cost
    rc2 = run_cost(s, usd_per_hour=3.6, capacity_rps=20.0)
    assert rc2.slo_basis == "capacity" and rc2.at_slo.output_usd == pytest.approx(0.5)
    none = run_cost(RunSummary.from_dict({"mode": "open", **d, "goodput_rps": 0.0}), usd_per_hour=3.6)
    assert none.at_slo is None and "SLO" in none.slo_basis


def test_the_slo_point_of_a_run_saved_before_goodput_was_bounded_is_its_throughput():
    """The H200 chat run (saved 2026-11-26) reads goodput 5.55 against 5.18 req/s completed in its window: the SLO
    point takes the 5.18, the recommender's capacity for the same run, so the report and the recommender agree."""
    d = {"input_tokens_per_s": 6097.0, "output_tokens_per_s": 1130.0, "requests_per_s": 5.1833, "goodput_rps": 5.55,
         "n_ok": 333, "n_in_total": 391718, "n_out_total": 72588}
    rc = run_cost(RunSummary.from_dict({"mode": "open", **d}), usd_per_hour=4.54)
    assert rc.slo_rps == pytest.approx(5.1833) and rc.slo_basis == "goodput"


def test_replicas_with_headroom():
    assert replicas_needed(20.0, 5.0, headroom=0.2) == 5  # 24 / 5 = 4.8 -> 5
    assert replicas_needed(20.0, 4.0, headroom=0.2) == 6
    assert replicas_needed(10.0, 12.0, headroom=0.2) == 1  # exactly 12/12
    assert replicas_needed(10.0, 6.0, headroom=0.2) == 2  # 12 / 6 = 2.0000000000000004 in floats -> still 2
    assert replicas_needed(0.1, 100.0) == 1
    with pytest.raises(ValueError, match="capacity"):
        replicas_needed(1.0, 0.0)


def test_monthly_cost_is_730_hours():
    assert monthly_cost_usd(2.0, devices_per_replica=2, replicas=3) == pytest.approx(2.0 * 2 * 3 * 730)
