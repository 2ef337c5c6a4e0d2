"""A misbehaving server, measured by real `advisor bench` processes: every failure is recorded, named and judged."""

from __future__ import annotations

import json

import pytest

from advisor.saved.store import load_run
from tests.faults.conftest import advisor, write_scenario

pytestmark = pytest.mark.faults


def _bench(server, tmp_path, *extra: str, duration_s: float = 3.0):
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=duration_s, rate_rps=8.0, warmup_s=0.5, n_out=8)
    return advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url,
                   "--out", str(tmp_path / "runs"), "--json", *extra)


@pytest.mark.parametrize(("mode", "kind"), [("500", "http_5xx"), ("429", "http_429"), ("close", "connection"),
                                            ("malformed", "stream"), ("refuse", "http_4xx")])
def test_a_server_failing_every_request_is_refused_by_the_preflight(fault_server, tmp_path, mode, kind):
    res = _bench(fault_server(mode=mode), tmp_path)
    assert res.returncode == 1 and "could not serve a warm-up request" in res.stderr and kind in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1  # one clear line, no traceback
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*/result.json"))


def test_a_server_that_starts_failing_mid_run_is_failed_with_the_error_kinds_first(fault_server, tmp_path):
    server = fault_server(die_after=6)  # the process exits once 6 requests have started (2 of them warm-up)
    res = _bench(server, tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["verdict"]["status"] == "FAILED", doc["verdict"]
    assert doc["verdict"]["reasons"][0].startswith("Most requests failed")
    assert "connection" in doc["verdict"]["reasons"][0]
    assert not any("saturated" in r for r in doc["verdict"]["reasons"])
    run = load_run(doc["path"])
    assert sum(r.ok for r in run.records()) >= 1  # what was measured before the server died is kept


@pytest.mark.parametrize(("mode", "kind"), [("500", "http_5xx"), ("refuse", "http_4xx")])
def test_every_request_refused_after_a_good_start_is_failed_not_saturated(fault_server, tmp_path, mode, kind):
    res = _bench(fault_server(mode=mode, fail_after=2), tmp_path)
    doc = json.loads(res.stdout)
    assert doc["verdict"]["status"] == "FAILED"
    assert doc["verdict"]["reasons"][0].startswith(f"Most requests failed: {doc['summary']['n_requests']} of")
    assert kind in doc["verdict"]["reasons"][0] and not any("saturated" in r for r in doc["verdict"]["reasons"])


def test_hanging_requests_time_out_and_the_run_is_saved(fault_server, tmp_path):
    res = _bench(fault_server(mode="hang"), tmp_path, "--timeout", "1")
    assert res.returncode == 1 and "warm-up" in res.stderr and "timeout" in res.stderr  # the preflight is bounded
    res = _bench(fault_server(mode="hang", fail_after=2), tmp_path, "--timeout", "1", duration_s=2.0)
    doc = json.loads(res.stdout)
    assert doc["summary"]["errors_by_kind"] == {"timeout": doc["summary"]["n_requests"]}
    assert doc["verdict"]["status"] == "FAILED"
