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
