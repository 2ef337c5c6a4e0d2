"""A run whose requests failed fails its SLOs by its errors, not its latency: no relaxation is offered (issue 40)."""

from __future__ import annotations

import re

import pytest

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from tests.advisor.recommend.runs import loaded, make_run


def _half_failed(run_id: str = "half", ttft_ms: float = 23.0, tpot_ms: float = 5.0) -> dict:
    """A fast run (p95 TTFT 23 ms) of which half the 200 measured requests failed."""
    run = make_run(run_id, ttft_ms=ttft_ms, tpot_ms=tpot_ms, status="INVALID")
    s = run["summary"]
    s.update(n_requests=200, n_ok=100, n_errors=100, error_rate=0.5, errors_by_kind={"timeout": 100})
    for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
        s[k]["n"] = 100
    run["verdict"]["reasons"] = ["50.0% of measured requests failed (100 of 200: timeout x100), over the 1.0% bound"]
    return run


def _relaxations(texts: list[str]) -> list[tuple[float, str]]:
    return [(float(m.group(2)), m.group(1)) for t in texts for m in re.finditer(r"relax (p95 \w+) to (\d+) ms", t)]


@pytest.mark.parametrize("limit_ms", [800.0, 20.0])
def test_failed_requests_are_told_apart_from_latency_and_never_relaxed(limit_ms):
    r = recommend(loaded([_half_failed()]), Constraints(ttft_ms=limit_ms, tpot_ms=100.0), load_catalog())
    (row,) = [x for x in r.rows if x.candidate.source == "measured"]
    kinds = {f.constraint for f in row.failures}
    assert "errors" in kinds, row.failures
    errors = next(f for f in row.failures if f.constraint == "errors")
    assert "100 of 200 requests failed" in errors.detail and errors.relaxed == {}
    assert "no latency limit lifts this" in errors.would_have_to_give
    texts = [f.would_have_to_give for f in row.failures] + list(r.advice.would_have_to_give if r.advice else ())
    # the old advice: "fails slo: p95 TTFT 23 ms > 800 ms limit", "relax p95 TTFT to 24 ms" (a tightening)
    assert not any(f.constraint == "slo" and "23 ms >" in f.detail for f in row.failures)
    limits = {"p95 TTFT": limit_ms, "p95 TPOT": 100.0}
    assert all(value > limits[name] for value, name in _relaxations(texts)), texts
    assert not _relaxations([f.would_have_to_give for f in row.failures if f.constraint == "errors"])


def test_a_latency_failure_still_offers_its_relaxation():
    r = recommend(loaded([make_run("slow", ttft_ms=900.0)]), Constraints(ttft_ms=800.0), load_catalog())
    (row,) = [x for x in r.rows if x.candidate.source == "measured"]
    assert [f.constraint for f in row.failures] == ["slo"]
    assert row.failures[0].would_have_to_give == "relax p95 TTFT to 900 ms"
