"""`advisor report` rests on the runs `advisor recommend` ranks, and names the same runs left out with the same reasons.

The folder mixes what a real runs folder holds: the shipped H200 runs (a GPU run of chat, a run of chat-closed), a
CPU run and an INVALID run of the same chat workload, and a run of the test engine 'fake' whose interactivity
(~120,000 tokens/s per user: it serves no model) would squash every real point of the frontier to x=0.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor_cli.recommend import recommend_command
from advisor_cli.report import report_command
from tests.advisor.recommend.h200 import CHAT, CLOSED, copy_runs, write_edited

CPU = "20261126-020000-chat-own-c0c0"
INVALID = "20261126-020100-chat-own-1ad0"
FAKE = "20261126-020200-chat-fake-fa6e"


def _on_cpu(d: dict) -> None:
    d["manifest"]["hardware"].update(gpus=[], cpu_cores=16)
    d["engine"]["device"] = "cpu"
    d["telemetry"].pop("gpu", None)


def _invalid(d: dict) -> None:
    d["verdict"] = {"status": "INVALID", "reasons": ["the load generator sent requests late"]}
    d["schedule"]["effective"]["offered_rps"] = 9.0


def _fake(d: dict) -> None:
    d["engine"].update(adapter="fake", engine="fake", model="tiny")
    d["summary"]["interactivity_tps"].update(p50=120_000.0, mean=120_000.0)
    d["summary"]["tpot_ms"].update(p50=0.008, p95=0.009, mean=0.008)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_runs(tmp_path_factory.mktemp("mixed"), (CHAT, CLOSED))
    for new_id, edit in ((CPU, _on_cpu), (INVALID, _invalid), (FAKE, _fake)):
        write_edited(root, CHAT, new_id, edit)
    return root


def _recommend(root: Path, *args: str) -> dict:
    res = CliRunner().invoke(recommend_command, ["--runs", str(root), "--json", "--no-measure", *args],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _report(root: Path, out: Path, *args: str) -> str:
    res = CliRunner().invoke(report_command, ["--runs", str(root), "-o", str(out), *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return out.read_text()


def _left_out(page: str) -> list[tuple[str, str]]:
    """(run id, reason) per item of the report's 'Runs left out' list."""
    block = page.split('<ul id="left-out">')[1].split("</ul>")[0]
    return [(rid, html_lib.unescape(why)) for rid, why in re.findall(r"\(run ([^)]+)\): (.*?)</li>", block)]


def _figures(page: str) -> dict[str, dict]:
    blocks = re.findall(r'<script type="application/json" id="(fig-[a-z]+)-data">(.*?)</script>', page, re.S)
    return {fid: json.loads(text) for fid, text in blocks}


def _charted_runs(page: str) -> set[str]:
    """The run ids the per-run charts draw (each trace's legend group is its run id)."""
    return {t["legendgroup"] for t in _figures(page)["fig-percentiles"]["data"]}


@pytest.fixture(scope="module")
def chat_report(mixed: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("report")
    (tmp / "c.yaml").write_text("scenario: chat\n")
    return _report(mixed, tmp / "r.html", "--constraints", str(tmp / "c.yaml"))


def test_report_and_recommend_rank_and_leave_out_the_same_runs(mixed: Path, chat_report: str):
    rec = _recommend(mixed, "--scenario", "chat")
    assert set(rec["runs_used"]) == {CHAT, CPU, INVALID}  # the INVALID run stays: a row that cannot carry a decision
    assert {(x["run_id"], x["kind"]) for x in rec["left_out"]} == {(FAKE, "buys nothing"), (CLOSED, "scenario")}
    assert _left_out(chat_report) == [(x["run_id"], x["reason"]) for x in rec["left_out"]]
    assert _charted_runs(chat_report) == set(rec["runs_used"])
    assert "serves no model" in dict(_left_out(chat_report))[FAKE]
    assert "'chat-closed', not the scenario asked for ('chat')" in dict(_left_out(chat_report))[CLOSED]


def test_the_fake_engine_is_not_on_the_frontier_nor_in_the_costs(chat_report: str):
    figs = _figures(chat_report)
    pareto = figs["fig-pareto"]["data"]
    xs = [x for t in pareto for x in t["x"] if x is not None]  # (the colour bar's trace has no point)
    assert xs and max(xs) < 1_000  # real engines here give ~117 tokens/s per user; the fake gave 120,000
    labels = [html_lib.unescape(t["name"]) for t in pareto if t.get("name")]  # one trace per run, named by it
    assert labels and not any("fake" in s for s in labels)
    cost_labels = [html_lib.unescape(y) for t in figs["fig-cost"]["data"] for y in t["y"]]
    assert cost_labels and not any("fake" in y for y in cost_labels)
    comparison = chat_report.split('<section id="comparison">')[1].split("</section>")[0]
    assert FAKE not in comparison and "fake" not in comparison


def test_without_a_scenario_the_report_keeps_both_but_still_leaves_the_fake_engine_out(mixed: Path, tmp_path: Path):
    page = _report(mixed, tmp_path / "all.html")
    assert _charted_runs(page) == {CHAT, CPU, INVALID, CLOSED}
    assert [rid for rid, _ in _left_out(page)] == [FAKE]


def test_a_scenario_with_no_run_is_one_clear_line(mixed: Path, tmp_path: Path):
    (tmp_path / "c.yaml").write_text("scenario: rag\n")
    res = CliRunner().invoke(report_command, ["--runs", str(mixed), "-o", str(tmp_path / "r.html"),
                                              "--constraints", str(tmp_path / "c.yaml")])
    assert res.exit_code == 2
    assert "scenario 'rag' has no run here; the runs given are of chat, chat-closed" in res.output
    assert not (tmp_path / "r.html").exists()


def test_a_run_that_is_not_valid_is_drawn_but_sets_no_frontier():
    from reports.figures import pareto_figure
    from tests.advisor.recommend.runs import dist, loaded, make_run

    def run(run_id: str, rps: float, tpot_ms: float, status: str = "VALID") -> dict:
        d = make_run(run_id, rps=rps, tpot_ms=tpot_ms, status=status)
        d["summary"]["interactivity_tps"] = dist(1000.0 / tpot_ms)
        return d

    slow, fast, bad = loaded([run("slow", 2.0, 40.0), run("fast", 4.0, 80.0), run("bad", 8.0, 20.0, "INVALID")])
    *points, line = pareto_figure([slow, fast, bad]).data  # one trace per run; "bad" beats both on both axes
    assert [p.marker.symbol for p in points] == ["circle", "circle", "x-open"] and line.name == "Pareto frontier"
    assert sorted(zip(line.x, line.y, strict=True)) == sorted((p.x[0], p.y[0]) for p in points[:2])
