"""Every registered metric reaches every reader: the summary, result.json, the console table, the report, the
dashboard and `compare`. Each reader takes its metrics from the registry; this test fails when one goes back to
a list of its own (a metric half added: computed but never shown, or shown in one place and not another)."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from advisor.metrics.registry import METRICS
from advisor.run.console import latency_table
from advisor.saved.store import RunResult, load_run
from advisor_cli import cli
from reports.dashboard.data import options_table, runs_table
from reports.html import render_report
from tests.advisor.recommend.h200 import H200_DIR

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def _console(run: RunResult) -> str:
    con = Console(record=True, width=400, file=io.StringIO())
    con.print(latency_table(run.summary))
    return con.export_text()


def _ok_run(runs: list[RunResult]) -> RunResult:
    return next(r for r in runs if r.summary.n_ok >= 100 and r.engine.model == "tiny-a")


def test_every_metric_reaches_every_reader(saved_runs, runs_root):
    run = _ok_run(saved_runs)
    saved = json.loads((run.path / "result.json").read_text())["summary"]
    console = _console(run)
    html = render_report([run])
    compared = CliRunner().invoke(cli, ["compare", "--runs", str(runs_root), run.run_id, run.run_id, "--json"])
    assert compared.exit_code == 0, compared.output
    figures = {f["key"] for f in json.loads(compared.stdout)["figures"]}
    dash_runs, dash_options = runs_table([run])[0], options_table([run])[0]
    docs = DOCS.read_text()
    for m in METRICS:
        d = run.summary.recorded(m.key)
        assert d is not None and d.n > 0, f"{m.key}: not in the summary"
        assert saved[m.key]["n"] == d.n, f"{m.key}: not in result.json"
        row = next((line for line in console.splitlines() if line.strip("│ ").startswith(m.header + " (")), None)
        assert (row is not None) == m.console, f"{m.key}: console row {'missing' if m.console else 'unexpected'}"
        assert f"<th>{m.header} ({m.unit})</th>" in html, f"{m.key}: not among the report's definitions"
        for p in m.percentiles:
            key = m.figure_key(p)
            assert key in figures, f"{m.key}: p{p:g} not in compare"
            in_tables = 2 if p in m.report_percentiles else 0  # the report's run tables show what the metric says
            assert html.count(f"<th>{m.header} p{p:g}</th>") == in_tables, f"{m.key}: p{p:g} in {in_tables} tables?"
        if m.headline is not None:
            column = f"{m.header} p{m.headline:g} {m.unit}"
            assert dash_runs[column] and dash_options[column], f"{m.key}: not in the dashboard's tables"
        assert f"`{m.key}`" in docs, f"{m.key}: docs/metrics.md does not define it"


def test_a_run_saved_before_a_metric_existed_shows_it_not_recorded(tmp_path):
    """The H200 runs (tests/data) predate time to second token and the E2E rate per user: every reader says
    "not recorded" for those, never a zero or an empty distribution."""
    root = tmp_path / "runs"
    src = sorted(H200_DIR.iterdir())[0]
    shutil.copytree(src, root / src.name)
    run = load_run(root / src.name)
    missing = [m for m in METRICS if run.summary.recorded(m.key) is None]
    assert {m.key for m in missing} == {"ttst_ms", "e2e_output_tps"}  # tpot_n_minus_1_ms: read from the old tpot_ms
    assert not {m.key for m in missing} & set(json.loads((src / "result.json").read_text())["summary"])
    console = _console(run)
    html = render_report([run])
    r = CliRunner().invoke(cli, ["compare", "--runs", str(root), run.run_id, run.run_id, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    for m in missing:
        assert m.key not in run.to_dict()["summary"]  # saved again, still not recorded
        if m.console:
            assert re.search(rf"{re.escape(m.header)} \([^)]*\)\s*│\s*not recorded", console), m.key
        assert not {m.figure_key(p) for p in m.percentiles} & {f["key"] for f in doc["figures"]}
    # the low tail of a rate those files held (interactivity, n = 333): not kept then, so not recorded, not "n/a"
    row = next(line for line in console.splitlines() if line.strip("│ ").startswith("interactivity ("))
    assert row.count("not recorded") == 3 and "n too small" not in row
    assert any("not recorded" in n and "E2E output tok/s per user p10" in n for n in doc["notes"])
    n_cols = sum(len(m.report_percentiles) for m in missing)
    assert html.count("<td>not recorded</td>") == 2 * n_cols  # the options table and the per-run table


@pytest.mark.parametrize("better", ["lower", "higher"])
def test_the_console_shows_each_metrics_worst_tail(saved_runs, better):
    """The tail columns hold p90..p99 of a time and p10..p1 of a rate per user (higher is better)."""
    run = _ok_run(saved_runs)
    m = next(m for m in METRICS if m.better == better and m.console and not m.over_sent)
    d = run.summary.recorded(m.key)
    assert d is not None
    row = next(line for line in _console(run).splitlines() if line.strip("│ ").startswith(m.header + " ("))
    cells = row.replace("│", " ").split()[-4:]  # p50, then the three tail columns
    want = [d.at(50), d.at(m.tail(90)), d.at(m.tail(95))]
    assert cells[:3] == [f"{v:,.1f}" for v in want]
    assert (m.tail(90), m.tail(99)) == ((90.0, 99.0) if better == "lower" else (10.0, 1.0))
