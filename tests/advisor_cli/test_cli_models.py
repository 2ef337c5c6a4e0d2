"""`advisor models create|list` and `advisor generate`, driven through click's CliRunner."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from click.testing import CliRunner

from advisor_cli.generate import generate_command
from advisor_cli.models import models_group
from own_engine.model import reference


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    return tmp_path


def test_create_prints_the_folder_last_and_list_shows_it(home) -> None:
    res = CliRunner().invoke(models_group, ["create", "mine", "--preset", "tiny", "--seed", "3"])
    assert res.exit_code == 0, res.output
    path = res.stdout.strip().splitlines()[-1]
    assert path == str(home / "models" / "mine")
    listed = CliRunner().invoke(models_group, ["list", "--json"])
    doc = json.loads(listed.stdout)
    assert [(m["name"], m["preset"]) for m in doc["models"]] == [("mine", "tiny")]
    assert {p["preset"] for p in doc["presets"]} >= {"tiny", "small-100m", "llama-1b"}
    again = CliRunner().invoke(models_group, ["create", "mine"])
    assert again.exit_code != 0 and "--force" in again.output and "Traceback" not in again.output


def test_create_unknown_preset_is_a_usage_error(home) -> None:
    res = CliRunner().invoke(models_group, ["create", "x", "--preset", "huge"])
    assert res.exit_code == 2 and "choose one of: tiny" in res.output


def test_generate_prints_ids_and_text_greedy(home, tiny_path) -> None:
    res = CliRunner().invoke(generate_command, ["--model", str(tiny_path), "--prompt-ids", "5,6,7", "--max-tokens",
                                                "6", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["output_ids"] == reference.greedy(tiny_path, [5, 6, 7], 6)
    assert doc["n_tokens"] == 6 and isinstance(doc["text"], str) and doc["text"]


def test_generate_from_text_on_the_static_engine_and_default_model(home) -> None:
    res = CliRunner().invoke(generate_command, ["--engine", "own-static", "--prompt", "Hello world",
                                                "--max-tokens", "3"])
    assert res.exit_code == 0, res.output
    assert "output ids (3)" in res.stdout and "text: '" in res.stdout
    assert (home / "models" / "tiny" / "config.json").is_file()  # the default model was made on first use


@pytest.mark.parametrize("args, message", [
    (["--prompt", "hi", "--prompt-ids", "1"], "exactly one of"),
    ([], "exactly one of"),
    (["--prompt-ids", "a,b"], "comma-separated integers"),
    (["--model", "nope", "--prompt-ids", "1"], "advisor models create nope"),
    # an engine that converts the folder on first use: a missing model is found before any engine loads
    (["--engine", "llama_cpp", "--model", "nope", "--prompt-ids", "1"], "advisor models create nope"),
    (["--engine", "nosuch", "--prompt-ids", "1"], "unknown engine"),
])
def test_generate_bad_input_is_one_line_without_traceback(home, args, message) -> None:
    res = CliRunner().invoke(generate_command, args)
    assert res.exit_code == 2  # was 1 for an unknown engine
    assert message in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("ids, bad", [("-5", "-5"), ("1,99999999999", "99999999999"), ("3,2048", "2048")])
def test_generate_refuses_ids_outside_the_vocabulary_before_decoding(home, tiny_path, ids, bad) -> None:
    # was: "error: OverflowError: number too small to fit in target type (a bug...)", exit 1
    res = CliRunner().invoke(generate_command, ["--model", str(tiny_path), "--prompt-ids", ids])
    assert res.exit_code == 2, res.output
    [line] = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert f"token id {bad} is out of range; give ids in [0, 2048)" in line and "bug" not in res.output


def test_generate_refuses_a_server_engine_and_names_the_ones_it_drives(home) -> None:
    # was: "needs the server's address: --url http://HOST:PORT", exit 1, though generate has no --url
    res = CliRunner().invoke(generate_command, ["--engine", "openai", "--prompt-ids", "1"])
    assert res.exit_code == 2, res.output
    assert "in-process engines only (fake, " in res.output and "advisor bench --engine openai --url" in res.output


def test_help_names_every_family_and_what_no_check_skips() -> None:
    # was: "a seeded random-weight LLaMA model" (Qwen2 and Mistral presets exist), and --no-check named only the
    # logit check though it skips the tokenizer's text check too
    create = " ".join(CliRunner().invoke(models_group, ["create", "--help"]).output.split())
    assert "LLaMA, Qwen2 or Mistral" in create
    convert = " ".join(CliRunner().invoke(models_group, ["convert", "--help"]).output.split())
    assert "--no-check skip both checks: logits against own_engine fp32, and the converted tokenizer" in convert


@pytest.mark.parametrize("where", ["sub/mine", "mine"])
def test_convert_of_a_missing_model_suggests_a_create_command_that_works(home, tmp_path, where) -> None:
    # was: `advisor models create /abs/path/sub/mine --preset tiny`, which create refuses (not a plain name)
    asked = str(tmp_path / where) if "/" in where else where
    res = CliRunner().invoke(models_group, ["convert", asked, "--to", "gguf"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    command = shlex.split(re.search(r"`advisor (models create [^`]+)`", res.output).group(1))
    made = CliRunner().invoke(models_group, command[1:])
    assert made.exit_code == 0, made.output
    assert made.stdout.strip().splitlines()[-1] == str(tmp_path / where if "/" in where else home / "models" / where)


def test_convert_names_its_positional_argument(home, tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(models_group, ["convert", str(tmp_path / "empty"), "--to", "onnx"])
    assert res.exit_code == 2 and "point MODEL at a Hugging Face model folder" in res.output
    assert "--model" not in res.output  # was "point --model at ...": convert has no --model


def test_create_refuses_a_path_before_saying_creating_and_names_the_root_command(home, tmp_path) -> None:
    # was: "creating '/x/y' from preset tiny ..." and then the refusal, with no way to make a model at /x/y
    res = CliRunner().invoke(models_group, ["create", str(tmp_path / "elsewhere" / "mine")])
    assert res.exit_code == 2 and "creating" not in res.output
    command = shlex.split(re.search(r"`advisor (models create [^`]+)`", res.output).group(1))
    made = CliRunner().invoke(models_group, command[1:])
    assert made.exit_code == 0 and made.stdout.strip().splitlines()[-1] == str(tmp_path / "elsewhere" / "mine")


def test_a_missing_model_named_like_a_preset_is_made_from_that_preset() -> None:
    # was: "create it with `advisor models create small-100m --preset tiny`": a 1M model under the 100M one's name
    from model_cache.paths import missing_model_hint

    assert "`advisor models create small-100m --preset small-100m`" in missing_model_hint("small-100m")
    assert "`advisor models create mine --preset tiny`" in missing_model_hint("mine")
