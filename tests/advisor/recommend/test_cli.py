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
    (["--price", "b300=abc"], "HARDWARE_ID=USD_PER_HOUR with a positive, finite price"),
    (["--price", "h999=1"], "unknown hardware 'h999'; known: "),
    (["--scenario", "nosuch"], "no saved runs for scenario 'nosuch'"),
])
def test_bad_input_is_one_line_naming_the_fix(runs_dir, args, message):
    r = CliRunner().invoke(recommend_command, ["--runs", str(runs_dir), "--no-measure", *args])
    assert r.exit_code != 0
    assert message in r.output
    assert "Traceback" not in r.output


def test_a_scenario_no_saved_run_has_is_a_usage_error_listing_those_they_have(runs_dir):
    # --scenario filters saved runs: a custom scenario's name is valid there, so the choices are the runs' own
    r = CliRunner().invoke(recommend_command, ["--runs", str(runs_dir), "--no-measure", "--scenario", "copilt"])
    assert r.exit_code == 2
    assert "no saved runs for scenario 'copilt'; the saved runs are of copilot" in " ".join(r.output.split())


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


@pytest.mark.parametrize("args, message", [
    (["--vendor", "bogus"], "unknown vendor 'bogus'; the catalog's vendors are amd, aws-graviton, intel, nvidia"),
    (["--price", "l4=nan"], "with a positive, finite price"),
    (["--price", "l4=inf"], "with a positive, finite price"),
])
def test_recommend_refuses_what_would_rule_out_or_misprice_every_option(runs_dir, args, message):
    # --vendor bogus was accepted and every option then failed "vendor nvidia not allowed"
    r = CliRunner().invoke(recommend_command, ["--runs", str(runs_dir), "--no-measure", *args])
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output


def test_recommend_refuses_an_unknown_vendor_in_the_constraints_file(runs_dir, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("vendors: [nvidia, bogus]\n")
    r = CliRunner().invoke(recommend_command, ["--runs", str(runs_dir), "--no-measure", "--constraints", str(f)])
    assert r.exit_code == 2 and "unknown vendor 'bogus'" in r.output


@pytest.mark.parametrize("text, message", [
    ('{"own": {"top1_agreement": "x"}}', "q.json: own.top1_agreement is 'x'; give a number from 0 to 1"),
    ('{"quality_drift": {"own": {"token_agreement": 1.5}}}', "q.json: quality_drift.own.token_agreement is 1.5"),
    ('{"own": "abc"}', "q.json: own is 'abc'; give a number from 0 to 1"),
    ('{"own": NaN}', "q.json: own is nan; give a number from 0 to 1"),
    ('{"own": {"top1": 0.9}}', "q.json: own has neither top1_agreement nor token_agreement"),
    ("[1, 2]", "q.json: the document must be an object of engine[/precision] to drift"),
])
def test_a_bad_quality_file_names_the_file_and_key_before_anything_is_measured(runs_dir, tmp_path, monkeypatch,
                                                                              text, message):
    # a bad value was dropped silently, or a float() error named neither file nor key, after bandwidth was measured
    import advisor.hardware.detect

    def no_measuring(*a, **k):
        raise AssertionError("measured before the quality file was read")

    monkeypatch.setattr(advisor.hardware.detect, "detect", no_measuring)
    f = tmp_path / "q.json"
    f.write_text(text)
    r = CliRunner().invoke(recommend_command, ["--runs", str(runs_dir), "--remeasure", "--quality", str(f)])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split())


@pytest.mark.parametrize("flag, message", [
    ("--quality", "quality file {} is a folder"),
    ("--constraints", "constraints file {} is a folder"),
    ("--prices", "prices file {} is a folder"),
])
def test_a_folder_given_for_a_file_is_said_to_be_a_folder(runs_dir, tmp_path, flag, message):
    r = CliRunner().invoke(recommend_command, ["--runs", str(runs_dir), "--no-measure", flag, str(tmp_path)])
    assert r.exit_code == 2 and message.format(tmp_path) in " ".join(r.output.split())


@pytest.mark.parametrize("text, message", [
    ("prices: [1]\n", "p.yaml: prices must map hardware ids to prices"),
    ("hardware: [1]\n", "p.yaml: hardware[0] is 1; each entry must be a mapping"),
    ("prices: {h100-sxm: abc}\n", "p.yaml: prices.h100-sxm is 'abc'; give a positive number of USD per device-hour"),
])
def test_hardware_refuses_a_bad_prices_file_in_one_line(tmp_path, text, message):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    r = CliRunner().invoke(hardware_command, ["--no-measure", "--prices", str(f)])
    assert r.exit_code == 2, r.output
    assert message in r.output and "a bug" not in r.output


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_hardware_refuses_a_non_finite_price_flag(value):
    # nan was a 4-line pydantic dump (exit 1); inf was accepted and shown as the price
    r = CliRunner().invoke(hardware_command, ["--no-measure", "--json", "--price", f"h100-sxm={value}"])
    assert r.exit_code == 2 and "positive, finite price" in r.output


def test_a_price_from_memory_is_never_the_headline_cost_until_priced_with_the_flag(runs_dir):
    # the CPU VM's catalog price has no citable source (from_memory): ranked with it, but not headlined
    args = ["--runs", str(runs_dir), "--peak-rps", "20", "--no-estimates", "--no-measure", "--hardware", "cpu-2core-vm"]
    d = json.loads(invoke(recommend_command, [*args, "--json"]).output)
    best = next(r for r in d["rows"] if r["key"] == d["best"])
    assert best["hardware"] == "cpu-2core-vm" and best["price_from_memory"]
    assert any("is from memory" in w and "--price cpu-2core-vm=USD_PER_HOUR" in w for w in d["warnings"])
    head = " ".join(invoke(recommend_command, args).output.split("Load:")[0].split())  # the headline, unwrapped
    assert "cost not headlined (price from memory" in head and "$" not in head.split(" - ")[0]
    priced = json.loads(invoke(recommend_command, [*args, "--price", "cpu-2core-vm=0.05", "--json"]).output)
    best = next(r for r in priced["rows"] if r["key"] == priced["best"])
    assert not best["price_from_memory"] and best["price_source"] == "--price flag"
    assert not any("from memory" in w for w in priced["warnings"])
    head = " ".join(invoke(recommend_command, [*args, "--price", "cpu-2core-vm=0.05"]).output.split("Load:")[0].split())
    assert "/month" in head and "price: $0.05/h per cpu-2core-vm, --price flag" in head


def test_hardware_lists_the_newer_parts_with_the_policy_and_node_prices_derived():
    r = invoke(hardware_command, ["--no-measure", "--json"])
    d = json.loads(r.output)
    ids = {h["id"] for h in d["catalog"]}
    assert {"h100-nvl", "gh200", "gb200", "b300", "mi325x", "mi355x", "gaudi3", "a10g", "rtx-pro-6000",
            "aws-m7g-large"} <= ids
    assert set(d["pricing_policy"]) == {"cloud_on_demand", "owned_tco"}
    aws = next(q for q in d["prices"]["h100-sxm"]["quotes"] if q["provider"] == "AWS")
    assert aws["derived_from_node"] and aws["per_device"] == pytest.approx(98.32 / 8)
    assert d["prices"]["b300"] is None  # no citable price: none is made up
    text = CliRunner().invoke(hardware_command, ["--no-measure"], terminal_width=200).output
    flat = " ".join(text.split())
    assert "Pricing policy, cloud_on_demand" in flat and "from memory: no citable source" in flat
    assert d["prices"]["cpu-2core-vm"]["from_memory"] and not d["prices"]["h100-sxm"]["from_memory"]
    assert "No cloud_on_demand price: pass --price b300=USD" in flat
