"""The `advisor` command line as a user meets it: help, a real run, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from advisor_cli import cli

FAST = ["--engine", "fake", "--opt", "ttft_ms=5", "--opt", "tpot_ms=1", "--duration", "2", "--warmup", "0.5",
        "--rate", "20"]


def _advisor(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from advisor_cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def test_help_lists_the_main_commands():
    res = CliRunner().invoke(cli, ["--help"])
    assert res.exit_code == 0
    for cmd in ("bench", "scenarios", "engines"):
        assert cmd in res.output
    res = CliRunner().invoke(cli, ["bench", "--help"])
    assert res.exit_code == 0 and "--scenario" in res.output and "--full-scale" in res.output


def test_bench_json_prints_one_document_and_saves_the_run(tmp_path):
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", *FAST, "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["engine"]["adapter"] == "fake"
    assert doc["schedule"]["overrides"]["rate_rps"] == 20
    assert doc["summary"]["n_requests"] > 0
    assert (tmp_path / doc["run_id"] / "result.json").exists()
    assert (tmp_path / doc["run_id"] / "requests.parquet").exists()
    shown = CliRunner().invoke(cli, ["show", doc["run_id"], "--runs", str(tmp_path)])
    assert shown.exit_code == 0 and "verdict" in shown.output


def test_bench_console_summary(tmp_path):
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", *FAST, "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "verdict:" in res.output and "TTFT" in res.output and "saved:" in res.output


def test_scenarios_and_engines_list():
    res = CliRunner().invoke(cli, ["scenarios", "--json"])
    names = {s["name"] for s in json.loads(res.output)}
    assert {"copilot", "chat", "bursty", "long-context", "batch"} <= names
    res = CliRunner().invoke(cli, ["engines", "--json"])
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert rows["fake"]["available"]
    assert rows["tensorrt_llm"]["available"] is False and rows["tensorrt_llm"]["why"]
    assert rows["fake"]["tasks"] == ["generate"]  # every engine, the tasks it serves, and its options
    assert rows["openai-embed"]["tasks"] == ["embed"] and rows["openai-rerank"]["tasks"] == ["rerank"]
    assert "url" in {o["name"] for o in rows["openai-embed"]["options"]}


@pytest.mark.parametrize("args, message", [
    (["bench", "--scenario", "nope"], "unknown scenario"),
    (["bench", "--scenario", "chat", "--engine", "nope"], "unknown engine"),
    (["bench", "--scenario", "chat", "--rate", "-1"], "rate"),
    (["bench", "--scenario", "chat", "--opt", "novalue"], "KEY=VALUE"),
])
def test_bad_input_is_one_line_naming_the_fix(tmp_path, args, message):
    res = _advisor(*args, "--out", str(tmp_path), cwd=tmp_path)
    assert res.returncode != 0
    assert message in res.stderr.lower() or message in res.stderr
    assert "Traceback" not in res.stderr
    assert not list(tmp_path.glob("*/result.json"))


def test_malformed_scenario_yaml_names_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nworkload: [unclosed\n")
    res = _advisor("bench", "--scenario", str(bad), "--engine", "fake", cwd=tmp_path)
    assert res.returncode != 0 and "bad.yaml" in res.stderr and "Traceback" not in res.stderr
