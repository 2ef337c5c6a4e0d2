"""Rates over the window the requests really took, checked against the server's own log.

A request cap with a long --duration ends the schedule long before the planned window: every rate
(offered, achieved, throughput, goodput) is divided by the time the requests took, not by the
duration nobody ran. A window too short for a rate to mean anything is refused before the run.
"""

from __future__ import annotations

import json

import pytest

from tests.faults.conftest import advisor, write_scenario

pytestmark = pytest.mark.faults

N = 120


def _served(server) -> tuple[int, float, int]:
    """The server's own view: requests served (warm-up included), seconds from first receipt to last write,
    and output tokens written."""
    reqs = server.requests()
    t0 = min(r["t_recv_ns"] for r in reqs)
    t1 = max(r["chunks"][-1][0] for r in reqs)
    return len(reqs), (t1 - t0) / 1e9, sum(n for r in reqs for _, n in r["chunks"])


def test_a_request_cap_with_a_long_duration_rates_over_the_time_the_requests_took(fault_server, tmp_path):
    server = fault_server(tpot_ms=2, ttft_ms=10)
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=600.0, rate_rps=20.0, warmup_s=0.0, n_out=8)
    res = advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--max-requests",
                  str(N), "--out", str(tmp_path / "runs"), "--json")
    assert res.returncode in (0, 3), res.stderr
    s = json.loads(res.stdout)["summary"]
    n_served, span_s, tokens = _served(server)
    assert n_served >= N  # the cap's requests, plus advisor's own warm-up request
    server_rps = N / span_s  # the server saw the measured requests arrive and finish over ~6 s, not 600 s
    assert span_s < 20
    assert s["window_s"] == pytest.approx(span_s, rel=0.1), (s["window_s"], span_s)
    for key in ("offered_rps", "requests_per_s", "goodput_rps"):
        assert s[key] == pytest.approx(server_rps, rel=0.1), (key, s[key], server_rps)
    assert s["output_tokens_per_s"] == pytest.approx(N * 8 / span_s, rel=0.1)
    assert s["offered_rps"] == pytest.approx(20.0, rel=0.1)  # what was asked, over the real window


def test_a_sweep_with_a_request_cap_judges_each_step_over_its_real_window(fault_server, tmp_path):
    server = fault_server(tpot_ms=2, ttft_ms=10)
    scenario = write_scenario(tmp_path / "s.yaml", duration_s=600.0, rate_rps=20.0, warmup_s=0.0, n_out=8)
    res = advisor("sweep", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--rates",
                  "20,40", "--max-requests", str(N), "--out", str(tmp_path / "runs"), "--json")
    assert res.returncode in (0, 3), res.stderr
    doc = json.loads(res.stdout)
    assert "clearly past saturation" not in doc["stop_reason"], doc["stop_reason"]
    for step in doc["steps"]:
        p = step["point"]
        assert p["achieved_rps"] == pytest.approx(p["rate_rps"], rel=0.15), p


@pytest.mark.parametrize(("flag", "value", "says"), [
    ("--duration", "1e-9", "--duration must be 0.1 to 1e+07 seconds (a rate over a shorter window means nothing)"),
    ("--duration", "1e308", "--duration must be 0.1 to 1e+07 seconds"),
    ("--rate", "1e308", "--rate must be at most 1e+06 req/s"),
    ("--warmup", "1e308", "--warmup must be at most 1e+07 seconds"),
])
def test_a_window_too_short_or_a_number_too_large_is_refused_before_the_run(fault_server, tmp_path, flag, value, says):
    server = fault_server()
    scenario = write_scenario(tmp_path / "s.yaml")
    res = advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, flag, value,
                  "--out", str(tmp_path / "runs"))
    assert res.returncode == 2 or res.returncode == 1, res.stderr
    assert says in res.stderr and "Traceback" not in res.stderr and "a bug" not in res.stderr
    assert not server.log.exists() or not server.requests()  # nothing was sent
    assert not (tmp_path / "runs").exists()
