"""Every shipped scenario's default run on the embedded default (own_engine, tiny model, this CPU) is VALID.

`advisor bench --scenario NAME` with nothing else is what a new user runs first: its `fit` block must give
enough requests for p95, an engine that keeps up and a load generator that keeps up, on a 2-core machine.

The runs are exactly `bench_once`'s (plan, then `run_bench` on a started engine) except that one own_engine
serves all of them, as it does every step of `advisor sweep`: its start-up (a child process that imports torch
and loads the model, seconds on a busy 2-core machine) is no part of any run's window or verdict. The engine
keeps nothing from one run to the next that could help the next one (no prefix cache); a leak would make a
later scenario fail, not pass.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import adapters
from adapters.base import Adapter, EngineOptions
from advisor.bench import BenchConfig, open_engine, plan, run_bench
from scenarios.catalog import scenario_names


@pytest.fixture(scope="module")
def own_engine() -> Iterator[tuple[Adapter, EngineOptions]]:
    options = adapters.parse_options("own", None)  # what `plan` gives a scenario run with no --engine-option
    with open_engine(BenchConfig(scenario_names()[0], engine="own"), options) as adapter:
        yield adapter, options


@pytest.mark.slow
@pytest.mark.parametrize("name", scenario_names())
def test_the_default_run_of_every_shipped_scenario_is_valid(name, tmp_path, azure_traces, own_engine):
    adapter, options = own_engine
    cfg = BenchConfig(name, engine="own", out_dir=tmp_path)
    p = plan(cfg)
    assert p.options == options, "this scenario's default engine options differ: it needs its own engine"
    run = run_bench(cfg, adapter, planned=p)
    assert run.verdict.status == "VALID", (name, run.verdict.reasons)
    assert run.summary.n_ok >= 100
