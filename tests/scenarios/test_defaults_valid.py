"""Every shipped scenario's default run on the embedded default (own_engine, tiny model, this CPU) is VALID.

`advisor bench --scenario NAME` with nothing else is what a new user runs first: its `fit` block must give
enough requests for p95, an engine that keeps up and a load generator that keeps up, on a 2-core machine.

The runs are exactly `bench_once`'s (plan, then `run_bench` on a started engine) except that one own_engine
serves all of them, as it does every step of `advisor sweep`: its start-up (a child process that imports torch
and loads the model, seconds on a busy 2-core machine) is no part of any run's window or verdict. The engine
keeps nothing from one run to the next that could help the next one (no prefix cache); a leak would make a
later scenario fail, not pass.

One re-run, for one reason only: a run whose sole fault is late sends (the load generator, pinned to a core
of its own, fell behind by a few ms) runs again, and the test says so; late sends in both runs fail. On this
2-core VM the hypervisor takes ~1% of the CPU in bursts (steal time in /proc/stat), which can delay a few
sends of one run. Most of what looked like that until 2026-11-26 was the load generator's own fault: it built
the next prompts before a request woken on time had sent (advisor.loadgen.drive, fixed in 4364cde), which made
chat-multiturn, copilot and mooncake-sample late in every run on the CI VM; this test skipped them then, as
"this machine's timers". After the fix all ten passed in one run, none re-run (13:23-13:32 UTC).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

import adapters
from adapters.base import Adapter, EngineOptions
from advisor.bench import BenchConfig, open_engine, plan, run_bench
from scenarios.catalog import scenario_names

RERUNS_ON_LATE_SENDS = 1


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
    for _ in range(RERUNS_ON_LATE_SENDS):
        if not _late_sends_only(run):
            break
        first = run.verdict.reasons[0]
        run = run_bench(cfg, adapter, planned=p)
        warnings.warn(f"{name}: ran again after late sends only ({first[:80]}...): now {run.verdict.status}",
                      stacklevel=1)
    assert run.verdict.status == "VALID", (name, run.verdict.reasons)
    assert run.summary.n_ok >= 100


def _late_sends_only(run) -> bool:
    """INVALID for one reason: the send-lag check failed (advisor.metrics.lag)."""
    check = run.loadgen.lag_check
    return (run.verdict.status == "INVALID" and check is not None and not check.ok
            and tuple(run.verdict.reasons) == (check.reason(),))
