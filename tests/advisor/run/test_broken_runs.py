"""One damaged run folder never breaks report, recommend or the dashboard: it is skipped with one warning line.

The report needs only result.json: a run whose per-request records are missing or damaged is reported from it,
with one warning saying what is left out.
"""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from advisor.run.bench import BenchConfig, bench_once
from advisor_cli import cli
from reports.dashboard.data import load_runs
from scenarios.overrides import Overrides


def _retag(folder, run_id: str) -> None:
    f = folder / "result.json"
    d = json.loads(f.read_text())
    d["run_id"] = run_id
    f.write_text(json.dumps(d))


def _runs(tmp_path):
    """Two real runs (the fake engine) and two damaged copies of them."""
    root = tmp_path / "runs"
    ov = Overrides(rate_rps=20, duration_s=1.0, warmup_s=0.2, max_input_tokens=32, max_output_tokens=6)
    for name in ("good-1", "good-2"):
        run = bench_once(BenchConfig("copilot", engine="fake", overrides=ov, out_dir=tmp_path / "made"))
        shutil.copytree(run.path, root / name)
        _retag(root / name, name)
    for name, src in (("truncated", "good-1"), ("wrong-types", "good-2")):
        shutil.copytree(root / src, root / name)
        _retag(root / name, name)
    parquet = root / "truncated" / "requests.parquet"
    parquet.write_bytes(parquet.read_bytes()[:40])  # a copy cut short
    f = root / "wrong-types" / "result.json"
    d = json.loads(f.read_text())
    d["summary"]["n_ok"] = "two hundred"
    f.write_text(json.dumps(d))
    return root


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("warning: skipped run")]


def _records_warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if "reported from result.json alone" in line]


def test_report_skips_damaged_runs_with_one_warning_each(tmp_path):
    root = _runs(tmp_path)
    res = CliRunner().invoke(cli, ["report", "--runs", str(root), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    warnings = _warnings(res.output)
    assert len(warnings) == 1 and "wrong-types" in warnings[0] and "summary.n_ok is str" in warnings[0]
    assert _records_warnings(res.output) == ["warning: run truncated: its requests.parquet cannot be read; reported "
                                             "from result.json alone (no latency CDF; SLO checks use its saved "
                                             "percentiles)"]
    assert "wrote" in res.output and "(3 runs" in res.output


def test_report_of_named_runs_skips_a_damaged_one(tmp_path):
    root = _runs(tmp_path)
    res = CliRunner().invoke(cli, ["report", "good-1", "wrong-types", "--runs", str(root), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert len(_warnings(res.output)) == 1 and "(1 runs" in res.output


def test_a_named_run_without_its_records_is_reported_from_result_json(tmp_path):
    # it warned "skipped run" and then said "no runs selected" though a run was named
    root = _runs(tmp_path)
    (root / "good-1" / "requests.parquet").unlink()
    res = CliRunner().invoke(cli, ["report", "good-1", "--runs", str(root), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert _records_warnings(res.output) == ["warning: run good-1: its requests.parquet is missing; reported from "
                                             "result.json alone (no latency CDF; SLO checks use its saved percentiles)"]
    assert "(1 runs" in res.output and "good-1" in (tmp_path / "r.html").read_text()


def test_a_named_run_that_cannot_be_reported_says_why_in_one_line(tmp_path):
    root = _runs(tmp_path)
    res = CliRunner().invoke(cli, ["report", "wrong-types", "--runs", str(root), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and not (tmp_path / "r.html").exists()
    errors = [line for line in res.output.splitlines() if "wrong-types" in line]
    assert len(errors) == 1 and errors[0].startswith("Error: nothing to report: run wrong-types: ")
    assert "summary.n_ok is str" in errors[0] and "no runs selected" not in res.output


def test_recommend_skips_damaged_runs_with_one_warning_each(tmp_path):
    root = _runs(tmp_path)
    res = CliRunner().invoke(cli, ["recommend", "--runs", str(root), "--scenario", "copilot", "--no-measure", "--json"])
    assert res.exit_code == 0, res.output
    assert len(_warnings(res.output)) == 2
    doc = json.loads(res.output.splitlines()[-1])
    assert doc["rows"]


def test_the_dashboard_lists_the_good_runs_and_says_which_it_skipped(tmp_path):
    warnings: list[str] = []
    runs = load_runs(_runs(tmp_path), warnings)
    assert sorted(r.run_id for r in runs) == ["good-1", "good-2"] and len(warnings) == 2
