"""A server whose token counts disagree with its text, or that cuts every answer short, is said on the console."""

from __future__ import annotations

import pytest

from tests.faults.conftest import advisor, write_scenario

pytestmark = pytest.mark.faults


@pytest.mark.parametrize(("opts", "says"), [
    ({"claim_factor": 2.0}, "the server counted 480 output tokens where the text it sent holds 240 (+100%)"),
    ({"short_factor": 0.5}, "10 of 10 successful requests got fewer output tokens than they asked for"),
])
def test_token_count_claims_and_short_answers_are_console_warnings(fault_server, model_dir, tmp_path, opts, says):
    server = fault_server(tokenizer=model_dir, tpot_ms=1, **opts)
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=2.5, rate_rps=4.0, warmup_s=0.0)
    res = advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--model",
                  model_dir, "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stderr
    assert "warning: " + says in " ".join(res.stdout.split()), res.stdout[-2000:]
