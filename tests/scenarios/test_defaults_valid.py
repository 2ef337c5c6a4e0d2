"""Every shipped scenario's default run on the embedded default (own_engine, tiny model, this CPU) is VALID.

`advisor bench --scenario NAME` with nothing else is what a new user runs first: its `fit` block must give
enough requests for p95, an engine that keeps up and a load generator that keeps up, on a 2-core machine.
"""

from __future__ import annotations

import pytest

from advisor.bench import BenchConfig, bench_once
from scenarios.catalog import scenario_names


@pytest.mark.slow
@pytest.mark.parametrize("name", scenario_names())
def test_the_default_run_of_every_shipped_scenario_is_valid(name, tmp_path, azure_traces):
    run = bench_once(BenchConfig(name, engine="own", out_dir=tmp_path))
    assert run.verdict["status"] == "VALID", (name, run.verdict["reasons"])
    assert run.summary["n_ok"] >= 100
