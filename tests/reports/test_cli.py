"""`advisor report`: runs and sweeps by id, one HTML file out, clear errors for bad input."""

from __future__ import annotations

import re
import time
from pathlib import Path

from click.testing import CliRunner

from advisor.sweep.capacity import SweepPoint, capacity_from_sweep
from advisor.sweep.run import SweepResult
from advisor_cli.report import report_command
from tests.reports.make_runs import EVIL_RUN_ID


def _invoke(*args: str):
    return CliRunner().invoke(report_command, list(args), catch_exceptions=False)


def test_report_of_named_runs(runs_root: Path, saved_runs, tmp_path: Path):
    out = tmp_path / "r.html"
    ids = [r.run_id for r in saved_runs[:2]]
    res = _invoke(*ids, "--runs", str(runs_root), "-o", str(out), "--price-usd-hour", "1.5")
    assert res.exit_code == 0, res.output
    assert f"wrote {out} (2 runs" in res.output
    html = out.read_text()
    assert all(rid in html for rid in ids)
    assert saved_runs[2].run_id not in html


def test_no_arguments_reports_every_run_in_the_folder(runs_root: Path, saved_runs, tmp_path: Path):
    out = tmp_path / "all.html"
    res = _invoke("--runs", str(runs_root), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert f"({len(saved_runs)} runs" in res.output
    assert EVIL_RUN_ID in out.read_text()


def test_a_sweep_brings_its_runs(runs_root: Path, saved_runs, tmp_path: Path):
    members = [r for r in saved_runs if r.engine.model == "tiny-a"]
    points = tuple(SweepPoint.from_run(r.summary.offered_rps, r) for r in members)
    sweep = SweepResult("sweep-test", "copilot", "fake", None, time.strftime("%Y-%m-%dT%H:%M:%SZ"), points,
                        capacity_from_sweep(points), "max steps")
    sweep.save(runs_root)
    out = tmp_path / "sweep.html"
    res = _invoke("sweep-test", "--runs", str(runs_root), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert f"({len(members)} runs" in res.output
    html = out.read_text()
    assert "sweep-test" in html and "max steps" in html
    # the capacity in words with its reason, not the saved dict dumped as key=value pairs
    cap = sweep.capacity
    cell = html.split("<h3>Sweeps</h3>")[1].split("</table>")[0]
    want = ("none" if cap.capacity_rps is None else f"{cap.capacity_rps:g} req/s") + f": {cap.reason}"
    assert want.replace("'", "&#39;") in cell
    assert "run_id=" not in cell and "capacity_rps=" not in cell and "first_failure=" not in cell


def test_constraints_file_drives_the_recommendation(runs_root: Path, saved_runs, tmp_path: Path):
    cons = tmp_path / "c.yaml"
    cons.write_text("ttft_ms: 0.001\n")  # nothing meets this
    out = tmp_path / "c.html"
    valid = next(r for r in saved_runs if r.verdict.status == "VALID")
    res = _invoke(valid.run_id, "--runs", str(runs_root), "-o", str(out), "--constraints", str(cons))
    assert res.exit_code == 0, res.output
    summary = out.read_text().split('<section id="summary">')[1].split("</section>")[0]
    assert "No recommendation" in summary and "Recommended:" not in summary
    assert "relax p95 TTFT" in summary  # what would have to give
    invalid = next(r for r in saved_runs if r.verdict.status != "VALID")
    res = _invoke(invalid.run_id, "--runs", str(runs_root), "-o", str(out))
    summary = out.read_text().split('<section id="summary">')[1].split("</section>")[0]
    assert "No trustworthy recommendation yet" in summary and "Recommended:" not in summary
    assert "advisor sweep --scenario" in summary or "advisor bench --scenario" in summary


def test_unknown_run_is_a_one_line_error(runs_root: Path, tmp_path: Path):
    res = CliRunner().invoke(report_command, ["nope", "--runs", str(runs_root), "-o", str(tmp_path / "x.html")])
    assert res.exit_code == 2
    assert re.search(r"nope: no run or sweep there .* from `ls ", " ".join(res.output.split()))
    assert not (tmp_path / "x.html").exists()


def test_bad_constraints_file_is_a_usage_error(runs_root: Path, saved_runs, tmp_path: Path):
    res = CliRunner().invoke(report_command, [saved_runs[0].run_id, "--runs", str(runs_root), "-o",
                                              str(tmp_path / "x.html"), "--constraints", str(tmp_path / "missing.yaml")])
    assert res.exit_code == 2
    assert "missing.yaml not found" in res.output


def test_non_finite_prices_are_usage_errors_before_anything_is_read(runs_root: Path, saved_runs, tmp_path: Path):
    # nan or inf reached an assert in the interval code: "AssertionError ... (a bug)"
    for flag in ("--price-usd-hour", "--usd-per-kwh"):
        for value in ("nan", "inf"):
            res = CliRunner().invoke(report_command, [saved_runs[0].run_id, "--runs", str(runs_root), "-o",
                                                      str(tmp_path / "x.html"), flag, value])
            assert res.exit_code == 2, res.output
            assert f"Invalid value for {flag}: must be a finite number >= 0, got {value}" in res.output
    assert not (tmp_path / "x.html").exists()


def test_an_unknown_vendor_in_the_constraints_is_a_usage_error(runs_root: Path, saved_runs, tmp_path: Path):
    # it was accepted, and every option then failed "vendor ... not allowed"
    f = tmp_path / "c.yaml"
    f.write_text("vendors: [bogus]\n")
    res = CliRunner().invoke(report_command, [saved_runs[0].run_id, "--runs", str(runs_root), "-o",
                                              str(tmp_path / "x.html"), "--constraints", str(f)])
    assert res.exit_code == 2
    assert "c.yaml: vendors: unknown vendor 'bogus'; the catalog's vendors are amd, aws-graviton, intel, nvidia" in res.output
