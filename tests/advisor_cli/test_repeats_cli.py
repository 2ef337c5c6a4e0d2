"""`--repeats N` on bench, sweep and matrix: N ordinary saved runs per cell (per step), grouped, one engine."""

from __future__ import annotations

import json
from dataclasses import replace

from click.testing import CliRunner

import adapters
from advisor.repeats.group import group_runs
from advisor.saved.store import list_runs
from advisor.sweep.run import load_sweep
from advisor_cli import cli
from tests.adapters.test_contract import CountingFake

FAST = ["--engine", "fake", "--opt", "ttft_ms=2", "--opt", "tpot_ms=1", "--duration", "0.6", "--warmup", "0",
        "--max-output-tokens", "4", "--max-input-tokens", "16"]


def _counting(monkeypatch) -> None:
    monkeypatch.setitem(adapters.REGISTRY, "fake", replace(adapters.REGISTRY["fake"],
                                                           target="tests.adapters.test_contract:CountingFake"))
    CountingFake.starts = 0


def test_bench_repeats_are_one_group_on_one_engine(tmp_path, monkeypatch):
    _counting(monkeypatch)
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", *FAST, "--rate", "40", "--repeats", "3",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert len(doc["runs"]) == 3 and CountingFake.starts == 1
    [group] = group_runs(list_runs(tmp_path))
    assert group.group_id == doc["group"]["group_id"] and group.n == 3
    assert doc["group"]["figures"]["ttft_p50_ms"]["n"] == 3


def test_each_repeat_line_names_its_group(tmp_path, monkeypatch):
    # was: only the run id, so a Ctrl-C in repeat 3 left the user without the id of the 2 repeats kept
    _counting(monkeypatch)
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", *FAST, "--rate", "40", "--repeats", "2",
                                   "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    [group] = group_runs(list_runs(tmp_path))
    assert "repeat 1/2: " in res.output and f"group {group.group_id}: `advisor compare`" in res.output


def test_bench_repeats_can_restart_the_engine_each_time(tmp_path, monkeypatch):
    _counting(monkeypatch)
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", *FAST, "--rate", "40", "--repeats", "2",
                                   "--restart-engine", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    assert CountingFake.starts == 2 and json.loads(res.output)["group"]["restart_engine"] is True


def test_sweep_repeats_are_per_step_and_the_report_finds_every_repeat(tmp_path, monkeypatch):
    _counting(monkeypatch)
    res = CliRunner().invoke(cli, ["sweep", "--scenario", "chat", *FAST, "--rates", "20,40", "--repeats", "2",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert all(len(s["run_ids"]) == 2 and s["group_id"] for s in doc["steps"]) and CountingFake.starts == 1
    sweep = load_sweep(doc["sweep_id"], tmp_path)
    assert [len(p.run_ids) for p in sweep.points] == [2] * len(doc["steps"])
    from reports.selection import load_selection

    runs = load_selection([doc["sweep_id"]], tmp_path).runs
    assert len(runs) == 2 * len(doc["steps"])


def test_matrix_repeats_per_cell(tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text("name: reps\ndefaults: {engine: fake, scenario: chat, duration: 0.6, warmup: 0, rate: 40,\n"
                    "  max_output_tokens: 4, max_input_tokens: 16, options: {ttft_ms: 2, tpot_ms: 1}}\n"
                    "cells:\n  - {name: a}\n  - {name: b, repeats: 1}\n")
    res = CliRunner().invoke(cli, ["matrix", str(plan), "--repeats", "2", "--out", str(tmp_path / "runs"), "--json"])
    assert res.exit_code == 0, res.output
    cells = {c["name"]: c for c in json.loads(res.stdout)["cells"]}
    assert len(cells["a"]["run_ids"]) == 2 and len(cells["b"]["run_ids"]) == 1  # a cell's own repeats: wins
