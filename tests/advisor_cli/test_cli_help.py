"""Help text that had gaps: an option with no words, a group that did not name a command, a device not listed."""

from __future__ import annotations

from click.testing import CliRunner

from advisor_cli import cli


def _help(*command: str) -> str:
    res = CliRunner().invoke(cli, [*command, "--help"])
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def test_show_runs_and_engines_json_say_what_they_do():
    assert "--runs PATH Folder of saved runs" in _help("show")
    assert "--json Print one JSON list: every engine" in _help("engines")


def test_models_group_names_import():
    assert "Create, list, convert and import models" in _help("models")


def test_bench_shows_the_simulated_device():
    assert "--device sim:h200 # own on a simulated H200" in _help("bench")
