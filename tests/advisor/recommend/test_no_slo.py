"""With no latency SLO at all (a fitted scenario leaves them unset) a recommendation says so with its headline."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
from advisor_cli.recommend import recommend_command
from tests.advisor.recommend.runs import loaded, make_run, write_runs


def _no_slo_run():
    run = make_run("fit", scenario="my-traffic", rps=2.0)
    run["slos"].update(ttft_ms=None, tpot_ms=None)
    run["summary"]["slo_met"] = {"ttft": None, "tpot": None, "e2e": None}
    return run


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def test_no_slo_is_a_warning_that_names_the_unbounded_estimate(catalog):
    r = recommend(loaded([_no_slo_run()]), Constraints(peak_rps=5), catalog)
    assert r.best is not None  # still ranked on load and budget
    (w,) = [x for x in r.warnings if "no latency SLO" in x]  # beside it: the single run's capacity is a lower bound
    assert "no latency SLO" in w and "'my-traffic'" in w and "load and budget only" in w
    worst = max(x.candidate.latency_ms["tpot_ms"] for x in r.rows if x.candidate.source == "estimated")
    assert f"p95 TPOT up to {worst:,.0f} ms" in w
    assert w in r.to_dict()["warnings"]


def test_a_limit_from_the_flags_or_the_scenario_removes_the_warning(catalog):
    for r in (recommend(loaded([_no_slo_run()]), Constraints(peak_rps=5, tpot_ms=100), catalog),
              recommend(loaded([make_run("b")]), Constraints(peak_rps=5), catalog)):
        assert not [w for w in r.warnings if "no latency SLO" in w]


def test_the_console_prints_it_with_the_headline(tmp_path):
    root = write_runs(tmp_path / "runs", [_no_slo_run()])
    res = CliRunner().invoke(recommend_command, ["--runs", str(root), "--peak-rps", "5", "--no-measure"])
    assert res.exit_code == 0, res.output
    head = " ".join(res.output.split("Ranked options")[0].split())
    assert "warning: no latency SLO" in head
