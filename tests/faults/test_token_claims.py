"""A server that claims more tokens than its text holds is overruled by the model's tokenizer, and one that cuts
every answer short makes the run INVALID (issue 40: `overcount` halved TPOT/ITL, `short` was VALID)."""

from __future__ import annotations

import json

import pytest

from advisor.saved.store import load_run
from tests.faults.conftest import advisor, write_scenario

pytestmark = pytest.mark.faults


def _bench(server, model_dir, tmp_path, *extra: str):
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=2.5, rate_rps=4.0, warmup_s=0.0)
    return advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--model",
                   model_dir, "--out", str(tmp_path / "runs"), *extra)


def test_a_server_claiming_twice_the_tokens_is_overruled_by_the_tokenizer(fault_server, model_dir, tmp_path):
    server = fault_server(tokenizer=model_dir, tpot_ms=4, claim_factor=2.0)
    res = _bench(server, model_dir, tmp_path)
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stdout.split())
    assert "the server's usage claimed over 10% more tokens than the model's tokenizer finds" in said, said[-2000:]
    run = load_run(next((tmp_path / "runs").glob("*/result.json")).parent)
    ok = [r for r in run.records() if r.ok]
    assert ok and all(r.n_out == 24 and r.token_source == "tokenizer_over_usage" for r in ok)  # what was sent
    # TPOT: 4 ms a token as the server wrote them, not the 2 ms that twice the tokens would make it
    assert 3.5 < run.summary.tpot_ms.p50 < 6.0, run.summary.tpot_ms


def test_a_server_cutting_every_answer_short_is_invalid(fault_server, model_dir, tmp_path):
    server = fault_server(tokenizer=model_dir, tpot_ms=1, short_factor=0.5)
    res = _bench(server, model_dir, tmp_path, "--json")
    doc = json.loads(res.stdout)
    assert doc["verdict"]["status"] == "INVALID"
    assert any(r.startswith("10 of 10 successful requests got fewer output tokens than they asked for, over the "
                            "10% bound") for r in doc["verdict"]["reasons"]), doc["verdict"]
