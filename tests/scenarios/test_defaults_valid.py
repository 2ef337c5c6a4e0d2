"""Every shipped scenario's default run on the embedded default (own_engine, tiny model, this CPU) is VALID,
but for late sends on a noisy machine, which it reports.

`advisor bench --scenario NAME` with nothing else is what a new user runs first: its `fit` block must give
enough requests for p95, an engine that keeps up and a load generator that keeps up, on a 2-core machine.

The runs are exactly `bench_once`'s (plan, then `run_bench` on a started engine) except that one own_engine
serves all of them, as it does every step of `advisor sweep`: its start-up (a child process that imports torch
and loads the model, seconds on a busy 2-core machine) is no part of any run's window or verdict. The engine
keeps nothing from one run to the next that could help the next one (no prefix cache); a leak would make a
later scenario fail, not pass.

Late sends are reported, not judged, here: a run whose only fault is the send-lag check passes with a warning
that gives its figures; every other check of the verdict (enough requests, nothing failed, the engine kept up)
must pass. The load generator's own timing is held elsewhere, where the machine cannot decide it: the send
order against a deterministic engine (tests/advisor/loadgen/test_drive.py), and the client against peer tools
in the same run (benchmarks/loadgen.py, benchmarks/verdict_stability.py).

Why, measured on 2026-11-26. The CI machine is a 2-core VM whose noise changes by the hour, and no bound on
late sends held across it:
- CI of c310519: chat's default run had 5, then (re-run) 12 late sends of 136; 3 are allowed.
- The same test with a 10% bound, in a full local CI run (17:10-17:26 UTC): every open-loop scenario was late
  in both runs, 8-60 sends of 118-201 (up to 50%), while an hour earlier plain runs of chat had 0-1.
- What the machine took: `python benchmarks/machine_noise.py` (17:31) lost 309 ms in 10 s on the client's CPU
  while the engine's was busy, in 30 gaps of 5-12 ms, to the VM's own housekeeping (DAMON's kdamond, the VM
  agent); the same kind of loop at 16:45 lost 139 ms. A fresh page costs 3-8 us to touch here (256 MiB, 17:34).
- In a probed run in the bad hour (17:33), sends were late by 5-34 ms; the client's thread had waited for its
  CPU behind another task for 3 of the 47 (the lag check now says so, `n_late_waited`). For the others its
  thread was on its CPU for milliseconds of work that takes microseconds (sending one request to the engine,
  a pickle and a socket write: 9-19 ms; the same send alone took 46-50 us at p50). What stalled it is not
  identified: the host not running this virtual CPU (steal time reads 0 here), or interrupt work billed to
  the thread; neither is the client's to remove.
Most of what looked like machine noise before 2026-11-26 was the load generator's own fault (it built the next
prompts before a request woken on time had sent; fixed in 4364cde): that fault is held by test_drive.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

import adapters
from adapters.base import Adapter, EngineOptions
from advisor.run.bench import BenchConfig, open_engine, plan, run_bench
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
    if _late_sends_only(run):
        check = run.loadgen.lag_check
        warnings.warn(f"{name}: INVALID for late sends only, {check.n_late} of {check.n} (limit {check.limit_ms:g} ms; "
                      f"{check.n_late_waited} of them waited for the client's CPU behind another task): reported, "
                      "not judged here", stacklevel=1)
    else:
        assert run.verdict.status == "VALID", (name, run.verdict.reasons)
    assert run.summary.n_ok >= 100


def _late_sends_only(run) -> bool:
    """INVALID for one reason: the send-lag check failed (advisor.metrics.lag)."""
    check = run.loadgen.lag_check
    return (run.verdict.status == "INVALID" and check is not None and not check.ok
            and tuple(run.verdict.reasons) == (check.reason(),))
