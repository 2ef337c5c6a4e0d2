"""An estimate that cannot be sized (weights that do not fit, an unbounded latency) never reaches math.ceil (issue 38)."""

from __future__ import annotations

import json
import math

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from advisor.recommend.candidates import Candidate
from advisor.recommend.explain import advise
from advisor.recommend.order import rank
from advisor.recommend.ranking import evaluate
from tests.advisor.recommend.runs import loaded, make_run

LLAMA3_8B = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
             "intermediate_size": 14336, "vocab_size": 128256}


def llama3_8b(run_id: str, **kw) -> dict:
    """A bf16 run of Llama-3-8B's shape: its 16 GB of weights do not fit a c7i.2xlarge (16 GiB)."""
    d = make_run(run_id, precision="bf16", dtype_bytes=2, **kw)
    d["engine"]["extra"].update(n_params=8.03e9, model_config=LLAMA3_8B)
    return d


def test_weights_that_do_not_fit_make_no_row_and_say_why():
    runs = [llama3_8b("a", rps=0.2, ttft_ms=900, tpot_ms=90), llama3_8b("b", rps=0.3, ttft_ms=800, tpot_ms=85)]
    rec = recommend(loaded(runs), Constraints(peak_rps=20, ttft_ms=2000, tpot_ms=100), load_catalog())
    assert not [r for r in rec.rows if r.candidate.hardware_id == "aws-c7i-2xlarge"]
    assert any("aws-c7i-2xlarge" in n and "cannot be estimated" in n and "do not fit" in n for n in rec.notes)
    for r in rec.rows:  # nothing unbounded is shown as a latency or a range
        assert all(v is None or math.isfinite(v) for v in r.candidate.latency_ms.values())
    json.dumps(rec.to_dict(), allow_nan=False)


def _unbounded(capacity_rps: float | None = None) -> Candidate:
    inf = math.inf
    return Candidate(engine="own", hardware_id="aws-m7i-8xlarge", config="bf16", model="m", source="estimated",
                     run_id="a", devices=1, capacity_rps=capacity_rps,
                     latency_ms={"ttft_ms": inf, "tpot_ms": inf, "e2e_ms": inf},
                     slos={"ttft_ms": 800.0, "tpot_ms": 100.0, "e2e_ms": None}, input_tokens_per_request=256,
                     output_tokens_per_request=64, evidence="calibrated")


def test_nothing_in_recommend_overflows_on_an_infinite_estimate():
    cat = load_catalog()
    cons = Constraints(peak_rps=20, ttft_ms=800, tpot_ms=100, budget_usd_month=1000)
    for c in (_unbounded(), _unbounded(capacity_rps=2.0)):
        row = evaluate(c, cons, cat, 20.0, {})
        assert not row.passes
        slo = [f for f in row.failures if f.constraint == "slo"]
        assert slo and all("not estimated" in f.detail or "unbounded" in f.detail for f in slo)
        assert all(math.isfinite(v) for f in row.failures for v in f.relaxed.values() if isinstance(v, float))
        rows = rank([row], True, cons.tie_break)
        advise(rows, cons, lambda _, r=row: [r])
        json.dumps(rows[0].to_dict(), default=str)
