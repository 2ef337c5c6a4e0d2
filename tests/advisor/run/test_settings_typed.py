"""Settings typed end to end (issue 28): one Settings object from the command line to the saved run, and
one offered rate, computed once, saved once, read through one accessor (advisor.run.rates)."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.recommend.evidence import cell_command
from advisor.run import bench as bench_mod
from advisor.run import rates as run_rates
from advisor.run.console import print_run
from advisor.saved.store import RunResult, load_run
from advisor_cli import cli
from reports import labels
from scenarios.settings import Settings

REPO = Path(__file__).resolve().parents[3]
H200 = REPO / "tests" / "data" / "gpu_h200_2026_11_26"
FAST = ["--engine", "fake", "--opt", "ttft_ms=5", "--opt", "tpot_ms=1", "--duration", "2", "--warmup", "0.5",
        "--rate", "20", "--max-input-tokens", "64", "--max-output-tokens", "8"]


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """`advisor bench` on the fake engine, with the config, plan and result it made kept for the tests."""
    seen: dict = {}
    mp = pytest.MonkeyPatch()
    real_plan, real_run = bench_mod.plan, bench_mod.run_bench

    def plan(cfg):
        seen["cfg"], seen["plan"] = cfg, real_plan(cfg)
        return seen["plan"]

    def run_bench(cfg, adapter, progress=None, planned=None):
        seen["result"] = real_run(cfg, adapter, progress, planned=planned)
        return seen["result"]

    mp.setattr(bench_mod, "plan", plan)
    mp.setattr(bench_mod, "run_bench", run_bench)
    out = tmp_path_factory.mktemp("runs")
    try:
        res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", *FAST, "--out", str(out), "--json"])
    finally:
        mp.undo()
    assert res.exit_code == 0, res.output
    return seen


def test_the_settings_the_command_line_resolved_are_the_object_saved(cli_run):
    cfg, p, result = cli_run["cfg"], cli_run["plan"], cli_run["result"]
    assert p.schedule.overrides is cfg.overrides  # the Overrides the flags made, not a dict of them
    assert isinstance(p.schedule.settings, Settings)
    assert result.schedule.effective is p.schedule.settings  # no dict and no read-back by key in between
    assert result.schedule.overrides is cfg.overrides  # the flags' own object, saved as given
    back = load_run(result.path).schedule.effective
    assert back == dataclasses.replace(p.schedule.settings, target_rps=None)  # the target is not saved (module doc)


def test_a_new_run_holds_its_offered_rate_once_and_round_trips(cli_run, tmp_path):
    result = cli_run["result"]
    text = (result.path / "result.json").read_text()
    assert text.count('"offered_rps"') == 1
    doc = json.loads(text)
    assert doc["summary"]["offered_rps"] > 0 and "offered_rps" not in doc["schedule"]
    assert "offered_rps" not in doc["schedule"]["effective"] and "target_rps" not in doc["schedule"]["effective"]
    load_run(result.path).save(tmp_path)
    assert (tmp_path / result.run_id / "result.json").read_text() == text  # a new file round-trips byte for byte


def test_no_reader_in_advisor_takes_settings_back_by_key():
    pattern = re.compile(r"(settings|effective)(\.get\(|\[)")
    hits = [f"{p.relative_to(REPO)}:{i}" for p in sorted((REPO / "advisor").rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []


# Only these modules may read an `offered_rps` attribute: the producer, the accessor, and the sweep's point type
# (SweepPoint.from_run reads the summary's field, the one home the accessor reads too, and keeps its own copy).
MAY_READ_OFFERED = {"advisor/run/rates.py", "advisor/sweep/capacity.py", "advisor/run/window.py"}


def test_every_reader_of_the_offered_rate_goes_through_the_accessor():
    wrong = []
    for package in ("advisor", "reports", "advisor_cli"):
        for p in sorted((REPO / package).rglob("*.py")):
            shown = str(p.relative_to(REPO))
            if shown in MAY_READ_OFFERED or shown.startswith("advisor/metrics/"):  # metrics makes the summary
                continue
            for node in ast.walk(ast.parse(p.read_text())):
                if isinstance(node, ast.Attribute) and node.attr == "offered_rps" and isinstance(node.ctx, ast.Load):
                    wrong.append(f"{shown}:{node.lineno}")
    assert wrong == []


def _disagreeing_run() -> RunResult:
    """A run whose old fallback orders disagree: asked for 20 req/s, offered 21.07, completed 6.37, and a
    hand-edited schedule copy of 19."""
    doc = json.loads((H200 / "20261126-010554-chat-own-bf13" / "result.json").read_text())
    assert doc["schedule"]["overrides"]["rate_rps"] == 20.0
    doc["schedule"]["offered_rps"] = 19.0
    return RunResult.from_dict(doc, H200 / "20261126-010554-chat-own-bf13")


def test_the_report_and_the_recommender_read_one_offered_rate():
    run = _disagreeing_run()
    offered = run.summary.offered_rps
    assert offered == pytest.approx(21.0667, abs=1e-4)
    assert run_rates.offered_rps(run) == run_rates.load_rps(run) == labels.load_rps(run) == offered
    assert labels.load_text(run) == "21.1 req/s"  # the report's label
    # the recommender's next sweep is built around the same figure (the old order took the asked 20 req/s)
    assert "--rates 5.3,11,21 " in cell_command(run, 95.0, slo_failed=True)


def test_the_console_shows_the_same_offered_rate(capsys):
    print_run(_disagreeing_run())
    assert re.search(r"offered load\s*│\s*21\.07 req/s", capsys.readouterr().out)


@pytest.mark.parametrize("folder", sorted(p.parent.name for p in H200.glob("*/result.json")))
def test_old_files_load_and_their_offered_rate_is_the_one_they_wrote(folder):
    doc = json.loads((H200 / folder / "result.json").read_text())
    run = RunResult.from_dict(doc, H200 / folder)
    old = doc["schedule"]["offered_rps"]  # the copy an older version wrote beside the summary's
    assert old == doc["summary"]["offered_rps"]
    assert run_rates.offered_rps(run) == old
    expected = old if old else doc["summary"]["requests_per_s"]  # closed loop: the achieved rate
    assert run_rates.load_rps(run) == labels.load_rps(run) == expected
    eff = run.schedule.effective
    assert isinstance(eff, Settings) and eff.mode == doc["schedule"]["mode"] and eff.target_rps is None
    assert run.schedule.to_dict()["effective"] == {k: v for k, v in doc["schedule"]["effective"].items()
                                                   if k != "offered_rps"}


def test_an_old_arrival_that_todays_schema_refuses_still_loads():
    eff = Settings.from_dict({"arrival": {"process": "gamma", "rate_rps": 2.0, "cv": 1.5, "gone_key": 1},
                              "duration_s": 10, "fitted": True, "offered_rps": 2.0, "mode": "open"})
    assert eff.arrival is not None and eff.arrival.rate_rps == 2.0 and eff.mode == "open" and eff.fitted
    assert "gone_key" not in eff.to_dict()["arrival"]
    with pytest.raises(ValueError, match="arrival process advisor does not know"):
        Settings.from_dict({"arrival": {"process": "warp", "rate_rps": 2.0}})


def test_the_saved_overrides_are_the_command_lines_object_and_an_old_one_still_loads():
    from advisor.run.schedule import RunSchedule
    from scenarios.overrides import Overrides

    ov = Overrides(rate_rps=20.0, duration_s=30, full_scale=True)
    back = RunSchedule.from_dict(json.loads(json.dumps(RunSchedule("open", overrides=ov).to_dict())))
    assert back.overrides == ov and back.overrides.rate_rps == 20.0
    # a window today's range refuses (under 0.1 s) was saved by an older version: the run still loads, as saved
    old = RunSchedule.from_dict({"mode": "open", "overrides": {"duration_s": 0.05, "gone": 1}})
    assert old.overrides.duration_s == 0.05 and old.to_dict()["overrides"] == {"duration_s": 0.05}
    with pytest.raises(ValueError, match="--duration"):
        Overrides(duration_s=0.05)  # the command line still refuses it
