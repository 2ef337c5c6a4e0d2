"""What an estimate may rest on (issue 38): eligible runs of the same model shape, never an INVALID, SATURATED or
host-bound run as its base, never another model's efficiency."""

from __future__ import annotations

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from tests.advisor.recommend.runs import loaded, make_run

MICRO = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
         "intermediate_size": 256, "vocab_size": 256}


def _model(d: dict, name: str, n_params: float, cfg: dict | None = None) -> dict:
    d["engine"]["model"] = name
    d["engine"]["extra"]["n_params"] = n_params
    if cfg is not None:
        d["engine"]["extra"]["model_config"] = cfg
    return d


def _m7i_rows(runs: list[dict]) -> dict[str, dict]:
    rec = recommend(loaded(runs), Constraints(peak_rps=20, ttft_ms=5000, tpot_ms=1000), load_catalog())
    return {r.candidate.model: r.candidate.to_dict() for r in rec.rows
            if r.candidate.hardware_id == "aws-m7i-8xlarge" and r.candidate.source == "estimated"}


def test_a_run_of_another_model_cannot_move_an_estimate():
    small = [make_run("s1", rps=0.2, ttft_ms=600, tpot_ms=60), make_run("s2", rps=0.3, ttft_ms=500, tpot_ms=55)]
    before = _m7i_rows(small)["tiny"]
    # one VALID CPU run of a far smaller model, overhead-bound: its efficiency is a tiny fraction of the other's
    micro = _model(make_run("m1", rps=0.5, ttft_ms=400, tpot_ms=50), "micro", 2e5, MICRO)
    rows = _m7i_rows([*small, micro])
    after = rows["tiny"]
    assert after["latency_ms"] == before["latency_ms"] and after["capacity_rps"] == before["capacity_rps"]
    assert after["latency_range_ms"] == before["latency_range_ms"] and after["evidence"] == "calibrated"
    assert rows["micro"]["evidence"] == "uncalibrated"  # one run of its own shape: no backtest, and not the other's
    rec = recommend(loaded([*small, micro]), Constraints(peak_rps=20), load_catalog())
    (group,) = rec.backtest.groups
    assert set(group.run_ids) == {"s1", "s2"} and "0.04B params" in group.model


def test_no_estimate_rests_on_an_invalid_or_saturated_run():
    good = [make_run("g1", rps=0.2, ttft_ms=600, tpot_ms=60), make_run("g2", rps=0.3, ttft_ms=500, tpot_ms=55)]
    bad = [make_run("bad", rps=5.0, ttft_ms=300, tpot_ms=30, status="INVALID"),
           make_run("sat", rps=9.0, ttft_ms=200, tpot_ms=20, status="SATURATED")]
    for d in bad:  # another config of the same engine and model: a group of its own, with no eligible run
        d["engine"]["threads"] = 4
    rec = recommend(loaded([*good, *bad]), Constraints(peak_rps=20), load_catalog())
    est = [r.candidate for r in rec.rows if r.candidate.source == "estimated"]
    assert est and all(c.run_id in {"g1", "g2"} for c in est)  # the calibrated pool exists, and is not enough
    (line,) = [n for n in rec.notes if "4 threads" in n and "aws-m7i-8xlarge" in n]
    assert "cannot be estimated" in line and "run bad: verdict INVALID" in line and "run sat: SATURATED" in line
