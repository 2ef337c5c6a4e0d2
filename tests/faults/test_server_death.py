"""A launched server that dies mid-run is reported with its exit code, not only as "connection x16"."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from tests.faults.conftest import advisor, write_scenario
from tests.servers.mock_openai import free_port

pytestmark = pytest.mark.faults


def test_a_launched_server_that_dies_is_reported_with_its_exit_code(tmp_path):
    port = free_port()
    launch = shlex.join([sys.executable, "-m", "tests.faults.server", "--port", str(port), "--tpot-ms", "2",
                         "--die-after", "6"])  # os._exit(17) once 6 requests started (2 are advisor's warm-up)
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=3.0, rate_rps=8.0, warmup_s=0.5, n_out=8)
    res = advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", f"http://127.0.0.1:{port}",
                  "--launch", launch, "--out", str(tmp_path / "runs"), "--json")
    doc = json.loads(res.stdout)
    first = doc["verdict"]["reasons"][0]
    assert "the launched server" in first and "exited with code 17 during the run" in first, doc["verdict"]
    assert doc["verdict"]["status"] == "FAILED"
