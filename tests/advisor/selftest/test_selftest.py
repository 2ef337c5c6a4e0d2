"""`advisor selftest`: the documents, the words of a failure, the exit status, Ctrl-C, and the user's flag errors.

The checks themselves run for real in the slow group (tests/advisor/selftest/test_selftest_run.py); here they are
stand-ins, so what is tested is what the command does with them.
"""

from __future__ import annotations

import json
import signal

import pytest
import torch
from click.testing import CliRunner

from advisor.run import interrupts
from advisor.selftest import run as selftest
from advisor.selftest.checks import greedy_disagreement, nvml_check
from advisor.selftest.model import Check, SelftestConfig
from advisor_cli import cli


def _passing() -> Check:
    return Check("a", "First check", "pass", "all good", {"x": 1})


def _failing() -> Check:
    return Check("b", "Second check", "fail", "the ids differ at token 3 <b>", {})


def _crashing() -> Check:
    raise RuntimeError("engine exploded")


def test_a_failed_and_a_crashed_check_are_said_in_words_in_both_documents(tmp_path):
    cfg = SelftestConfig("cpu", tmp_path)
    doc = selftest.run_selftest(cfg, checks=[("a", _passing), ("b", _failing), ("c", _crashing)])
    assert doc["passed"] is False
    assert [c["status"] for c in doc["checks"]] == ["pass", "fail", "fail"]
    assert doc["failed"][0] == "Second check: the ids differ at token 3 <b>"
    assert "RuntimeError: engine exploded" in doc["failed"][1] and "traceback" in doc["checks"][2]["figures"]
    saved = json.loads((tmp_path / "selftest.json").read_text())
    assert saved["checks"] == doc["checks"] and saved["passed"] is False
    page = (tmp_path / "selftest.html").read_text()
    assert "2 check(s) failed" in page and "the ids differ at token 3 &lt;b&gt;" in page  # escaped


def test_all_passing_checks_pass(tmp_path):
    doc = selftest.run_selftest(SelftestConfig("cpu", tmp_path), checks=[("a", _passing)])
    assert doc["passed"] is True and doc["failed"] == [] and doc["checks"][0]["seconds"] is not None
    assert "every check passed" in (tmp_path / "selftest.html").read_text()


def test_an_interrupt_writes_what_was_measured_and_stops(tmp_path):
    def interrupted() -> Check:
        raise interrupts.Interrupted(signal.SIGINT)

    ran = []
    with pytest.raises(interrupts.Interrupted):
        selftest.run_selftest(SelftestConfig("cpu", tmp_path),
                              checks=[("a", _passing), ("i", interrupted), ("z", lambda: ran.append(1) or _passing())])
    saved = json.loads((tmp_path / "selftest.json").read_text())
    assert saved["interrupted_by"] == "SIGINT" and saved["passed"] is False
    assert [c["name"] for c in saved["checks"]] == ["a"] and ran == []


def test_exit_status_follows_the_checks(tmp_path, monkeypatch):
    monkeypatch.setattr(selftest, "plan", lambda cfg: [("a", _passing)])
    res = CliRunner().invoke(cli, ["selftest", "--device", "cpu", "--out", str(tmp_path / "ok")])
    assert res.exit_code == 0, res.output
    assert "every check passed" in res.output
    monkeypatch.setattr(selftest, "plan", lambda cfg: [("a", _passing), ("b", _failing)])
    res = CliRunner().invoke(cli, ["selftest", "--device", "cpu", "--out", str(tmp_path / "bad"), "--json"])
    assert res.exit_code == 1
    assert json.loads(res.output)["failed"] == ["Second check: the ids differ at token 3 <b>"]


def test_a_wrong_device_is_a_usage_error():
    res = CliRunner().invoke(cli, ["selftest", "--device", "tpu"])
    assert res.exit_code == 2 and "'tpu' is not one of" in res.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_names_the_fix():
    res = CliRunner().invoke(cli, ["selftest", "--device", "cuda"])
    assert res.exit_code == 2 and "--device cpu" in res.output


def test_nvml_on_cpu_is_not_applicable_not_a_failure(tmp_path):
    c = nvml_check(SelftestConfig("cpu", tmp_path))
    assert c.status == "n/a" and "--device cpu" in c.summary


def test_config_picks_models_and_refuses_a_bad_device(tmp_path):
    assert SelftestConfig("cuda", tmp_path).step_model == "llama-1b"
    assert SelftestConfig("cpu", tmp_path).step_model == "small-100m"
    assert SelftestConfig("cpu", tmp_path, quick=True).step_model == "tiny"
    with pytest.raises(ValueError, match="cpu or cuda"):
        SelftestConfig("tpu", tmp_path)  # type: ignore[arg-type]


def test_greedy_disagreement_finds_a_token_that_is_not_the_argmax():
    def logits(ids: list[int]) -> torch.Tensor:  # a model whose greedy next token is always (last id + 1) % 10
        out = torch.zeros(len(ids), 10)
        for i, t in enumerate(ids):
            out[i, (t + 1) % 10] = 1.0
        return out

    assert greedy_disagreement(logits, [[1, 2]], [[3, 4, 5]]) is None
    said = greedy_disagreement(logits, [[1, 2], [7]], [[3, 4, 5], [8, 9, 2]])
    assert said is not None and said.startswith("prompt 1, token 2: 2 where the reference's argmax is 0")


def test_an_unknown_step_model_is_refused_before_any_check(tmp_path, monkeypatch):
    # was: found inside the "step" check, after NVML and both greedy checks: "the check crashed: ValueError", exit 1
    monkeypatch.setattr(selftest, "plan", lambda cfg: pytest.fail("a check ran"))
    res = CliRunner().invoke(cli, ["selftest", "--device", "cpu", "--out", str(tmp_path / "st"), "--step-model", "bogus"])
    assert res.exit_code == 2, res.output
    assert "--step-model 'bogus' is not a preset (tiny, " in res.output and "Traceback" not in res.output
    assert not (tmp_path / "st").exists()


def test_a_step_model_folder_is_taken_as_an_absolute_path(tmp_path, monkeypatch):
    from model_cache.create import create_model

    folder = create_model("mine", "tiny", root=tmp_path)
    seen = []
    monkeypatch.setattr(selftest, "plan", lambda cfg: seen.append(cfg.step_model) or [("a", _passing)])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))  # no cached model named "mine"
    res = CliRunner().invoke(cli, ["selftest", "--device", "cpu", "--out", str(tmp_path / "st"), "--step-model", "mine"])
    assert res.exit_code == 0, res.output
    assert seen == [str(folder.resolve())]
