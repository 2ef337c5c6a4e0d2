"""A verdict CI can gate on: INVALID exits 3, FAILED 4, VALID and SATURATED 0; --exit-zero gives 0 whatever."""

from __future__ import annotations

import json

import pytest

from tests.faults.conftest import advisor, write_scenario

pytestmark = pytest.mark.faults

GATED = {"ADVISOR_EXIT_ZERO": ""}  # the suite sets it (tests/conftest.py); these tests check the codes themselves


def test_an_invalid_run_exits_3_unless_told_otherwise(tmp_path):
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=0.5, rate_rps=8.0, warmup_s=0.0)
    args = ("bench", "--scenario", str(scenario), "--engine", "fake", "--out", str(tmp_path / "runs"), "--json")
    res = advisor(*args, env=GATED)
    assert json.loads(res.stdout)["verdict"]["status"] == "INVALID"  # 4 requests: n too small for p95
    assert res.returncode == 3, res.stderr
    assert advisor(*args, "--exit-zero", env=GATED).returncode == 0
    assert advisor(*args, env={"ADVISOR_EXIT_ZERO": "1"}).returncode == 0


def test_a_failed_run_exits_4(fault_server, tmp_path):
    server = fault_server(mode="500", fail_after=2)
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=2.0, rate_rps=8.0, warmup_s=0.5, n_out=8)
    res = advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--out",
                  str(tmp_path / "runs"), "--json", env=GATED)
    assert json.loads(res.stdout)["verdict"]["status"] == "FAILED"
    assert res.returncode == 4, res.stderr


def test_a_server_hanging_one_request_in_four_is_invalid_not_saturated(fault_server, tmp_path):
    """Issue 40: 25% timeouts read SATURATED and exited 0; errors over their bound make it INVALID, exit 3."""
    server = fault_server(mode="hang", fail_after=2, fail_every=4, tpot_ms=1)  # the 2 warm-up requests pass
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=4.0, rate_rps=12.0, warmup_s=0.5, n_out=8)
    res = advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--timeout", "3",
                  "--out", str(tmp_path / "runs"), "--json", env=GATED)
    doc = json.loads(res.stdout)
    assert doc["summary"]["errors_by_kind"].keys() == {"timeout"}
    assert 0.15 < doc["summary"]["error_rate"] < 0.35  # one in four hung
    assert doc["verdict"]["status"] == "INVALID", doc["verdict"]
    assert any("of measured requests failed" in r and "timeout x" in r for r in doc["verdict"]["reasons"])
    # requests that hung late in the window time out after it: the run also looks saturated, as in the issue
    assert any("saturated at" in r for r in doc["verdict"]["reasons"]), doc["verdict"]
    assert res.returncode == 3, res.stderr
