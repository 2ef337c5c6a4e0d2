"""No recommendation from data that cannot carry one; error bars on estimates; ties; percentile support."""

from __future__ import annotations

import json
import shlex

import pytest
from click.testing import CliRunner

from advisor.catalog import load_catalog
from advisor.metrics.intervals import Interval
from advisor.metrics.slo_evidence import RunSample
from advisor.recommend import Constraints, recommend
from advisor.recommend.candidates import Candidate
from advisor.recommend.ranking import evaluate
from advisor_cli.recommend import recommend_command
from advisor_cli.sweep import sweep_command
from tests.advisor.recommend.runs import dist, loaded, make_run, write_runs

L4 = [{"name": "NVIDIA L4", "memory_gb": 24.0}]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def invalid_run(run_id: str, n_ok: int = 47, rps: float = 2.0, **kw) -> dict:
    r = make_run(run_id, rps=rps, status="INVALID", **kw)
    r["verdict"]["reasons"] = [f"n too small for p95 (n={n_ok}): run at least 100 successful measured requests."]
    r["schedule"].update(overrides={"rate_rps": rps, "duration_s": n_ok / rps, "max_input_tokens": 256}, warmup_s=2.0)
    for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
        r["summary"][k]["n"] = n_ok
    r["summary"].update(n_requests=n_ok, n_ok=n_ok, n_in_total=256 * n_ok, n_out_total=64 * n_ok)  # 256 in / 64 out
    return r


def test_only_invalid_runs_give_no_recommendation_and_the_commands_that_fix_it(tmp_path, catalog):
    root = write_runs(tmp_path / "runs", [invalid_run("a", 47, 2.0), invalid_run("b", 5, 1.0)])
    r = CliRunner().invoke(recommend_command, ["--runs", str(root), "--peak-rps", "20", "--no-measure", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["best"] is None and d["runners_up"] == []
    assert d["evidence"]["reason"].startswith("no trustworthy recommendation yet: none of the 2 runs is VALID")
    assert list(d["evidence"]) == ["reason", "commands", "notes"]  # EvidenceGap's fields, in order
    (cmd,) = d["evidence"]["commands"]  # one cell (same scenario, engine, model, lengths): one sweep
    line, why = cmd.split("  # ")
    assert ">= 120 requests per run" in why and "p95 limit needs 90" in why
    args = shlex.split(line)
    assert args[:2] == ["advisor", "sweep"]
    ctx = sweep_command.make_context("sweep", args[2:])  # every flag exists and parses
    assert ctx.params["rates"] == "1,2,4,8" and ctx.params["duration_s"] == 120  # 120 requests at the lowest rate
    assert ctx.params["max_input_tokens"] == 256
    # no estimate rests on an INVALID run (issue 38): no estimated row, and the notes say why
    assert not [row for row in d["rows"] if row["source"] == "estimated"]
    assert any("cannot be estimated" in n and "run a: verdict INVALID" in n for n in d["notes"])
    text = CliRunner().invoke(recommend_command, ["--runs", str(root), "--peak-rps", "20", "--no-measure"]).output
    assert text.lower().startswith("no trustworthy recommendation yet")
    assert "Recommended:" not in text


def test_a_run_of_48_requests_never_meets_a_p95_slo(catalog):
    run = make_run("small", rps=2.0)  # forced VALID: only the percentile support is under test
    for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
        run["summary"][k]["n"] = 48
    run["summary"].update(n_requests=48, n_ok=48)
    exact = {"small": RunSample({"ttft_ms": (100.0,) * 48, "tpot_ms": (20.0,) * 48, "e2e_ms": (900.0,) * 48})}
    for samples in (None, exact):
        rec = recommend(loaded([run]), Constraints(include_estimates=False, peak_rps=4), catalog, samples=samples)
        (row,) = rec.rows
        assert not row.passes and rec.best is None
        checks = {c["metric"]: c for c in row.candidate.slo_checks}
        assert checks["ttft_ms"]["status"] == "not established" and checks["ttft_ms"]["more_needed"] == 42
        assert any("not established" in f.detail for f in row.failures)
    run["summary"].update(n_requests=200, n_ok=200)
    for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
        run["summary"][k]["n"] = 200
    assert recommend(loaded([run]), Constraints(include_estimates=False, peak_rps=4), catalog).best is not None


def _estimate(latency_ms: float, low: float, high: float) -> Candidate:
    return Candidate(engine="own", hardware_id="aws-c7i-2xlarge", config="fp32", model="tiny", source="estimated",
                     run_id="r", devices=1, capacity_rps=10.0, latency_ms={"ttft_ms": 100.0, "tpot_ms": latency_ms,
                                                                           "e2e_ms": None},
                     slos={"ttft_ms": 800.0, "tpot_ms": 100.0, "e2e_ms": None}, input_tokens_per_request=256,
                     output_tokens_per_request=64, evidence="calibrated",
                     latency_range_ms={"tpot_ms": Interval.from_range(latency_ms, low, high, "test"),
                                       "ttft_ms": Interval.from_range(100.0, 50.0, 200.0, "test")})


def test_an_estimate_whose_pessimistic_end_misses_an_slo_fails_it(catalog):
    cons = Constraints(peak_rps=10)
    ok = evaluate(_estimate(60.0, 30.0, 95.0), cons, catalog, 10.0, {})
    assert ok.passes
    miss = evaluate(_estimate(60.0, 30.0, 120.0), cons, catalog, 10.0, {})  # 60 ms meets 100 ms; 120 ms does not
    (f,) = miss.failures
    assert f.constraint == "slo" and "up to 120 ms (estimate 60 ms) > 100 ms limit" in f.detail
    assert miss.candidate.slo_margin_ms["tpot_ms"] == pytest.approx(-20.0)


def test_every_passing_estimate_meets_its_slos_at_the_high_end_of_its_range(catalog):
    runs = [make_run("a", rps=2.0, ttft_ms=600, tpot_ms=60, hostname="h1"),
            make_run("b", rps=4.0, ttft_ms=700, tpot_ms=90, hostname="h2")]
    rec = recommend(loaded(runs), Constraints(peak_rps=20, tpot_ms=100), catalog)
    est = [r for r in rec.rows if r.candidate.source == "estimated"]
    assert est and any(r.passes for r in est)
    for r in est:
        for k, lim in r.candidate.slos.items():
            rng = r.candidate.latency_range_ms.get(k)
            if r.passes and lim is not None:
                assert rng is not None and rng.high <= lim
    cpu = [r for r in est if r.candidate.device_class == "cpu"]
    assert all(r.candidate.evidence == "calibrated" for r in cpu)
    assert any("leave-one-out backtest of own on 2 CPU" in a for r in cpu for a in r.candidate.assumptions)


def test_cpu_runs_carried_to_a_gpu_are_uncalibrated_and_stay_out_of_the_headline(catalog):
    runs = [make_run("a", rps=0.2, ttft_ms=600, tpot_ms=60)]  # too slow on a 2-core VM for 20 req/s
    rec = recommend(loaded(runs), Constraints(peak_rps=20, budget_usd_month=2000), catalog)
    gpu = [r for r in rec.rows if r.candidate.device_class == "gpu"]
    assert gpu and all(r.candidate.evidence == "uncalibrated" and not r.headline_ok for r in gpu)
    assert all("uncalibrated for GPU" in r.candidate.evidence_note for r in gpu)
    assert rec.best is None or rec.best.candidate.device_class == "cpu"
    allowed = recommend(loaded(runs), Constraints(peak_rps=20, budget_usd_month=2000, allow_uncalibrated=True), catalog)
    assert allowed.best is not None and allowed.best.candidate.device_class == "gpu"


def _repeats(run_id: str, engine: str, rates: list[float]) -> list[dict]:
    out = []
    for i, rps in enumerate(rates):
        r = make_run(f"{run_id}{i}", engine=engine, rps=rps, ttft_ms=300, precision="fp32")
        r["schedule"]["repeat"] = {"group_id": f"g-{run_id}", "index": i, "count": len(rates),
                                   "restart_engine": False}
        out.append(r)
    return out


def test_options_whose_intervals_overlap_are_a_tie_broken_by_complexity(catalog):
    cons = Constraints(include_estimates=False, peak_rps=20)
    # openvino is cheaper at its median (2.3 req/s per replica -> 11 replicas vs own's 12), but the repeats'
    # intervals overlap, so the difference is not established: own wins the tie on lower operational complexity
    runs = _repeats("own", "own", [1.8, 2.0, 2.2]) + _repeats("ov", "openvino", [2.0, 2.3, 2.6])
    rec = recommend(loaded(runs), cons, catalog)
    first, second = rec.rows[0], rec.rows[1]
    assert first.candidate.engine == "own" and second.candidate.engine == "openvino"
    assert first.tied_with == (second.key,) and second.tied_with == (first.key,)
    assert "tied on cost with #2 (ranges overlap)" in first.why and "lower operational complexity" in first.why
    assert first.monthly_range is not None and first.monthly_range.coverage == pytest.approx(0.75)
    assert first.candidate.repeats == 3 and first.candidate.capacity_range.n == 3
    by_margin = recommend(loaded(runs), Constraints(include_estimates=False, peak_rps=20, tie_break=("margin",)), catalog)
    assert by_margin.rows[0].tied_with  # still a tie; equal margins fall back to the central cost
    assert by_margin.rows[0].candidate.engine == "openvino"
    # single runs at the same medians: no interval, no tie, the cheaper one wins outright
    single = [make_run("o", engine="own", rps=2.0, ttft_ms=300), make_run("v", engine="openvino", rps=2.3, ttft_ms=300)]
    plain = recommend(loaded(single), cons, catalog)
    assert plain.rows[0].candidate.engine == "openvino" and not plain.rows[0].tied_with


def test_repeat_groups_are_one_option_judged_on_their_pooled_requests(catalog):
    runs = _repeats("own", "own", [1.8, 2.0, 2.2])
    for r in runs:  # 40 requests each: no single repeat establishes p95, the 120 pooled ones do
        for k in ("ttft_ms", "tpot_ms", "e2e_ms"):
            r["summary"][k].update(n=40, max=r["summary"][k]["p95"])
        r["summary"].update(n_requests=40, n_ok=40)
    rec = recommend(loaded(runs), Constraints(include_estimates=False, peak_rps=4), catalog)
    (row,) = rec.rows
    assert row.passes and row.candidate.repeats == 3
    assert {c["n"] for c in row.candidate.slo_checks} == {120}
    assert row.candidate.capacity_rps == pytest.approx(2.0)


def test_latency_range_in_the_summary_bound_path_is_conservative(catalog):
    run = make_run("x", rps=2.0, ttft_ms=600)
    run["summary"]["ttft_ms"] = dist(400.0, 600.0, n=200)  # p99 720, max 1200
    rec = recommend(loaded([run]), Constraints(include_estimates=False, ttft_ms=650), catalog)  # between p95 and p99
    (row,) = rec.rows
    chk = next(c for c in row.candidate.slo_checks if c["metric"] == "ttft_ms")
    assert not chk["n_over_exact"] and chk["status"] == "not established"
    exact = {"x": RunSample({"ttft_ms": (400.0,) * 199 + (700.0,), "tpot_ms": (20.0,) * 200,
                             "e2e_ms": (900.0,) * 200})}
    row2 = recommend(loaded([run]), Constraints(include_estimates=False, ttft_ms=650), catalog, samples=exact).rows[0]
    chk2 = next(c for c in row2.candidate.slo_checks if c["metric"] == "ttft_ms")
    assert chk2["n_over_exact"] and chk2["n_over"] == 1 and chk2["status"] == "met"
