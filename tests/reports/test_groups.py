"""Repeat groups in the report and the dashboard: one option, one row, its figures with their interval."""

from __future__ import annotations

import re

import pytest

from advisor.repeats.group import run_repeats
from advisor.saved.store import list_runs
from reports.costs import price_runs
from reports.dashboard import data as dash
from reports.html import _num, render_report
from reports.selection import make_recommendation
from tests.advisor.repeats.test_repeats import bench_fake


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    root = tmp_path_factory.mktemp("grouped")
    run_repeats(lambda i: bench_fake(root, 10.0 + 2 * i), 3, label="fake")
    bench_fake(root, 30.0)
    return list_runs(root)


def test_the_dashboard_shows_a_repeat_group_as_one_option_with_its_interval(grouped):
    rows = dash.options_table(grouped)
    assert len(rows) == 2
    g = next(r for r in rows if r["runs"] == "3")
    assert "×3 repeats" in g["option"] and g["interval"] == "75% of the median"
    assert re.fullmatch(r"[\d.,]+ \[[\d.,]+, [\d.,]+\]", g["TTFT p95 ms"])
    single = next(r for r in rows if r["runs"] == "1")
    assert single["interval"] == "single run" and "[" not in single["TTFT p95 ms"]
    assert "p95" in g["percentiles supported"] or "needs" in g["percentiles supported"]
    assert re.fullmatch(r"[\d.,]+( \[[\d.,]+, [\d.,]+\])?", g["cold start s"])  # each engine start's median


def test_the_report_compares_options_and_states_the_interval(grouped):
    html = render_report(grouped, prices=price_runs(grouped, usd_per_hour=1.0),
                         recommendation=make_recommendation(grouped))
    table = html.split('<table id="options">')[1].split("</table>")[0]
    assert table.count("<tr class=") == 2  # four runs, two options
    assert "×3 repeats" in table and "75.0%" in table and "single run" in table
    assert 'class="range">[' in table
    assert re.search(r"p95 TTFT: (met|failed|not established)", table)
    # cold start: each run's engine start, shown per option (the group's median) and per run
    assert "<th>cold start s</th>" in table
    ready = sorted(r.engine.ready_s for r in grouped)
    assert all(v is not None and v > 0 for v in ready)
    runs_table = html.split("Every run on its own")[1].split("</table>")[0]
    row = runs_table.split(grouped[0].run_id)[1].split("</tr>")[0]
    assert f"<td>{_num(grouped[0].engine.ready_s)}</td>" in row
