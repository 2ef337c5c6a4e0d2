import csv
from dataclasses import replace

import pytest

from advisor.sizing import backtest as B
from advisor.sizing.serving import combine
from advisor.sizing.tables import load


def test_the_shipped_fit_is_what_the_backtest_of_the_shipped_rows_gives():
    """fit.yaml's constants and ranges are this backtest's: a printed backtest and a printed range cannot disagree."""
    bt = B.run_backtest()
    shipped = B.fitted()
    assert shipped["rows"] == len(bt.of("in-sample")) == 1063
    for engine, p in bt.profiles.items():
        for k, v in shipped["profiles"][engine].items():
            assert getattr(p, k) == pytest.approx(v, abs=1e-3), (engine, k)
    for basis, engines in B.range_factors(bt).items():
        for engine, f in engines.items():
            for m, v in f.items():
                assert shipped["range_factors"][basis][engine][m] == pytest.approx(v, rel=1e-3)
    # the range is the 90th percentile of out-of-sample misses: it holds about 90% of them, by construction
    assert all(0.89 <= c <= 0.93 for k, c in B.coverage(bt, B.range_factors(bt)).items() if "model" not in k)


def test_the_fit_recovers_constants_that_made_the_measurements():
    rows, _ = B.read_rows()
    rows = [r for r in rows if r.engine == "vllm" and r.gpu == "h200_sxm"]
    truth = replace(B.base_profile("vllm"), host_ms=2.0, ttft_ms=80.0, sync=0.3, prefill_scale=1.2)
    ts = [B.row_terms(r, load(r.gpu, r.engine)) for r in rows]
    made = [combine(t, truth) for t in ts]
    got = B.fit_profile("vllm", ts, [s.ttft_ms for s in made], [s.tpot_ms for s in made])
    assert (got.host_ms, got.ttft_ms, got.sync, got.prefill_scale) == pytest.approx((2.0, 80.0, 0.3, 1.2))


def test_a_silicon_file_keeps_dense_aggregated_rows_and_counts_the_others(tmp_path):
    src = list(csv.DictReader(open(B.SILICON)))
    keep = src[:3]
    moe = {**src[0], "id": "moe", "model_path": "deepseek-ai/DeepSeek-V3"}
    disagg = {**src[1], "id": "disagg", "mode": "disagg"}
    f = tmp_path / "silicon.csv"
    with open(f, "w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=[*src[0].keys(), "mode"])
        w.writeheader()
        for r in (*keep, moe, disagg):
            w.writerow({"mode": "agg", **r})
    rows, skipped = B.read_rows(f)
    assert [r.id for r in rows] == [r["id"] for r in keep]
    assert skipped == {"not a shipped dense architecture (deepseek-ai/DeepSeek-V3)": 1, "disaggregated": 1}
    bt = B.run_backtest(f, schemes=("in-sample",))
    assert len(bt.of("in-sample")) == 3
