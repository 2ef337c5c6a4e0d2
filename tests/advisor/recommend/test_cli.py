"""`advisor recommend` and `advisor hardware` through click, on hand-made run folders."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from advisor_cli.hardware import hardware_command
from advisor_cli.recommend import recommend_command
from tests.advisor.recommend.runs import make_run, write_runs

L4 = [{"name": "NVIDIA L4", "memory_gb": 24.0}]


@pytest.fixture
def runs_dir(tmp_path):
    return write_runs(tmp_path / "runs", [
        make_run("a", engine="vllm", rps=10.0, ttft_ms=300, gpus=L4, precision="bf16", dtype_bytes=2),
        make_run("b", engine="own", rps=2.0, ttft_ms=600)])


def invoke(cmd, args):
    return CliRunner().invoke(cmd, args, catch_exceptions=False)


def test_recommend_json_is_one_document(runs_dir):
    r = invoke(recommend_command, ["--runs", str(runs_dir), "--scenario", "copilot", "--peak-rps", "20",
                                   "--p95-ttft-ms", "500", "--budget-usd-month", "10000", "--no-measure", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["best"] == d["rows"][0]["key"] and d["rows"][0]["passes"]
    measured = next(row for row in d["rows"] if row["key"].startswith("vllm@l4") and row["source"] == "measured")
    assert measured["replicas"] == 3 and measured["passes"]
    assert any(row["source"] == "estimated" and row["assumptions"] for row in d["rows"])


def test_recommend_constraints_file_and_flags_win(runs_dir, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("peak_rps: 20\nttft_ms: 500\nbudget_usd_month: 1000\ninclude_estimates: false\n")
    r = invoke(recommend_command, ["--runs", str(runs_dir), "--constraints", str(f), "--no-measure", "--json"])
    d = json.loads(r.output)
    assert d["best"] is None and any("raise the budget" in x for x in d["advice"]["would_have_to_give"])
    r2 = invoke(recommend_command, ["--runs", str(runs_dir), "--constraints", str(f), "--budget-usd-month", "5000",
                                    "--no-measure", "--json"])
    assert json.loads(r2.output)["best"].startswith("vllm@l4")


def test_recommend_price_override_changes_the_answer(runs_dir):
    r = invoke(recommend_command, ["--runs", str(runs_dir), "--peak-rps", "20", "--no-estimates", "--no-measure",
                                   "--price", "l4=0.1", "--json"])
    d = json.loads(r.output)
    assert d["best"].startswith("vllm@l4")  # 3 x 0.1 x 730 = $219 beats 12 CPU VMs at $782
    assert d["rows"][0]["price_source"] == "--price flag"


def test_recommend_tables_by_default(runs_dir):
    r = invoke(recommend_command, ["--runs", str(runs_dir), "--peak-rps", "20", "--no-measure"])
    assert r.exit_code == 0 and "Recommended" in r.output and "Ranked options" in r.output


@pytest.mark.parametrize("args, message", [
    (["--budget-usd-month", "-5"], "budget_usd_month"),
    (["--constraints", "missing.yaml"], "not found"),
    (["--hardware", "h999"], "unknown hardware h999"),
    (["--price", "l4"], "HARDWARE_ID=USD_PER_HOUR"),
    (["--scenario", "nosuch"], "no saved runs for scenario 'nosuch'"),
])
def test_bad_input_is_one_line_naming_the_fix(runs_dir, args, message):
    r = CliRunner().invoke(recommend_command, ["--runs", str(runs_dir), "--no-measure", *args])
    assert r.exit_code != 0
    assert message in r.output
    assert "Traceback" not in r.output


def test_runs_of_several_scenarios_need_one_named(tmp_path):
    # a capacity measured on chat traffic must not size replicas for code completion
    root = write_runs(tmp_path / "runs", [make_run("c", scenario="copilot", rps=2.0),
                                          make_run("h", scenario="chat", rps=10.0)])
    r = CliRunner().invoke(recommend_command, ["--runs", str(root), "--peak-rps", "20", "--no-measure"])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "the runs are of 2 scenarios (chat, copilot)" in " ".join(r.output.split())
    r = invoke(recommend_command, ["--runs", str(root), "--scenario", "chat", "--peak-rps", "20", "--no-measure",
                                   "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["rows"][0]["run_id"] == "h"


def test_no_runs_folder(tmp_path):
    r = CliRunner().invoke(recommend_command, ["--runs", str(tmp_path / "none"), "--no-measure"])
    assert r.exit_code != 0 and "advisor bench" in r.output


def test_hardware_lists_catalog_and_this_machine():
    r = invoke(hardware_command, ["--no-measure", "--json"])
    d = json.loads(r.output)
    assert {h["id"] for h in d["catalog"]} >= {"h100-sxm", "mi300x", "l4"}
    assert d["detected"]["catalog_id"] and d["prices"]["h100-sxm"]["source"]
    t = invoke(hardware_command, ["--no-measure"])
    assert "h100-sxm" in t.output and "This machine" in t.output


def test_headroom_help_says_it_is_a_fraction():
    # "--headroom 5" meant as 5% sized replicas for 6x the peak, silently: the help now says the unit
    out = " ".join(CliRunner().invoke(recommend_command, ["--help"]).output.split())
    assert "as a fraction: 0.2 (the default) sizes for 20% more" in out
