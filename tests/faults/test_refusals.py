"""A refused command writes nothing, and lengths that cannot be held are refused before the run."""

from __future__ import annotations

import pytest

from tests.faults.conftest import advisor, write_scenario

pytestmark = pytest.mark.faults


def test_a_sweep_refused_for_the_context_length_leaves_no_sweep_behind(fault_server, tmp_path):
    server = fault_server()  # states max_model_len 4096
    scenario = write_scenario(tmp_path / "s.yaml", n_in=8000, n_out=8)
    out = tmp_path / "runs"
    res = advisor("sweep", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--rates", "2,4",
                  "--out", str(out))
    assert res.returncode == 1, res.stderr
    assert "requests of up to 8008 tokens" in res.stderr and "the model holds 4096" in res.stderr
    assert not out.exists() or not any(out.iterdir()), list(out.rglob("*"))  # no sweep.json, no run folder
    assert all(r["n_prompt"] < 100 for r in server.requests())  # the engine's own warm-up only: nothing measured


@pytest.mark.parametrize("engine", ["fake", "openai"])
def test_a_huge_length_scale_is_refused_before_the_run(fault_server, tmp_path, engine):
    scenario = write_scenario(tmp_path / "s.yaml", n_in=2000, n_out=100)
    out = tmp_path / "runs"
    target = ("--url", fault_server().url) if engine == "openai" else ()
    for scale, says in (("1e6", "--length-scale must be at most 10000"),
                        ("9000", "advisor builds at most 16,777,216"),
                        ("1000", "the model holds 4096" if engine == "openai" else "past advisor's ceiling of 1,048,576")):
        res = advisor("bench", "--scenario", str(scenario), "--engine", engine, *target, "--length-scale", scale,
                      "--out", str(out), timeout=120)
        assert res.returncode in (1, 2), res.stderr
        assert says in res.stderr and "MemoryError" not in res.stderr and "a bug" not in res.stderr, res.stderr
        assert not out.exists()


def test_the_ceiling_can_be_raised_and_an_empty_out_is_refused(tmp_path):
    scenario = write_scenario(tmp_path / "s.yaml", n_in=2000, n_out=100, duration_s=0.5, rate_rps=2)
    res = advisor("bench", "--scenario", str(scenario), "--engine", "fake", "--max-request-tokens", "1000",
                  "--out", str(tmp_path / "runs"))
    assert res.returncode == 1 and "past advisor's ceiling of 1,000" in res.stderr
    res = advisor("bench", "--scenario", str(scenario), "--engine", "fake", "--out", "")
    assert res.returncode == 2 and "an empty --out would save into the current folder" in res.stderr
