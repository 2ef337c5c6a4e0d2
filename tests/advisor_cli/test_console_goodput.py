"""The console's goodput line: with no SLO set there is no goodput to report, not 100% attainment."""

from __future__ import annotations

from click.testing import CliRunner

from advisor_cli import cli
from tests.advisor.recommend.runs import make_run, write_runs


def _show(tmp_path, slo_set: bool = True) -> str:
    run = make_run("r1")
    if not slo_set:
        run["slos"].update(ttft_ms=None, tpot_ms=None)
        run["summary"]["slo_met"] = {"ttft": None, "tpot": None, "e2e": None}
    root = write_runs(tmp_path / "runs", [run])
    res = CliRunner().invoke(cli, ["show", "r1", "--runs", str(root)])
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def test_no_slo_set_shows_no_goodput(tmp_path):
    # a fitted scenario leaves its SLOs unset: every completed request would count as "good"
    text = _show(tmp_path, slo_set=False)
    assert "SLO attainment" not in text
    assert "n/a: no SLO set" in text


def test_with_an_slo_goodput_and_attainment_are_shown(tmp_path):
    text = _show(tmp_path)
    assert "2.00 req/s (SLO attainment 100.0%)" in text
