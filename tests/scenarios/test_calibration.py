"""copilot and chat reproduce the Azure traces they are calibrated on (mean/median lengths, inter-arrival CV)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scenarios.catalog import load_scenario
from scenarios.schedule import Overrides, build_schedule, resolve
from scenarios.trace_files import read_trace

SEEDS = (0, 1, 2, 3, 4)


def _stats(t: np.ndarray, n_in: np.ndarray, n_out: np.ndarray) -> dict[str, float]:
    gaps = np.diff(t)
    return {"input mean": n_in.mean(), "input median": float(np.median(n_in)), "output mean": n_out.mean(),
            "output median": float(np.median(n_out)), "inter-arrival CV": gaps.std() / gaps.mean()}


@pytest.mark.parametrize(("scenario", "trace_file"), [("copilot", "AzureLLMInferenceTrace_code.csv.gz"),
                                                      ("chat", "AzureLLMInferenceTrace_conv.csv.gz")])
def test_scenario_reproduces_its_trace(scenario: str, trace_file: str, azure_traces: Path) -> None:
    trace = read_trace(azure_traces / trace_file)
    want = _stats(np.array(trace.t_s), np.array(trace.n_in), np.array(trace.n_out))
    s = load_scenario(scenario)
    full = Overrides(full_scale=True, duration_s=trace.duration_s, warmup_s=0)  # as long as the trace
    assert resolve(s, full).target_rps == pytest.approx(trace.rate_rps, rel=0.02)  # at the trace's own rate
    counts = []
    for seed in SEEDS:
        reqs = build_schedule(s, seed, full).requests
        counts.append(len(reqs))
        got = _stats(np.array([r.t_sched_s for r in reqs]), np.array([r.n_in for r in reqs]),
                     np.array([r.n_out for r in reqs]))
        for k, v in want.items():
            assert got[k] == pytest.approx(v, rel=0.10), f"{scenario} seed {seed}: {k} {got[k]:.2f} vs trace {v:.2f}"
    assert np.mean(counts) == pytest.approx(len(trace), rel=0.10)
