"""Issue 40: a log of ~10 simultaneous requests every ~3 s (the Mooncake conversation trace's shape) fits to
batched arrivals that reproduce it, and its bench plan agrees with itself over seeds; a Poisson log stays gamma.

Before: on/off with on_cv 73.7-104, gap CV 62.8 against the log's 3.06, and 73 to 3,979 requests over seeds 0-7
in the fit's own 60 s plan of 150.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scenarios.catalog import load_scenario
from scenarios.errors import ScenarioError
from scenarios.fit.arrival_check import choose
from scenarios.fit.fit import FitOptions, fit_logs
from scenarios.fit.report import FitReport
from scenarios.schedule import Overrides, build_schedule
from tests.scenarios.fit.make_logs import (
    batched_mooncake_rows,
    gamma_times,
    lognormal_lengths,
    openai_rows,
    write_jsonl,
)

PLAN_SPREAD = 0.20  # requests per seed in the fit's 60 s plan, against 2.5 req/s x 60 s (group sizes vary, CV 0.3)


@pytest.fixture(scope="module")
def mooncake(tmp_path_factory) -> tuple[Path, list[dict], FitReport]:
    d = tmp_path_factory.mktemp("mooncake")
    rows = batched_mooncake_rows()
    write_jsonl(d / "conversation_trace.jsonl", rows)
    out = d / "fit.yaml"
    report = fit_logs(FitOptions(logs=(d / "conversation_trace.jsonl",), out=out, html=True))
    return out, rows, report


def test_the_trace_shape_fits_to_batched_arrivals_at_its_rate_size_and_period(mooncake) -> None:
    out, rows, report = mooncake
    t = np.array([r["timestamp"] for r in rows]) / 1000.0
    log_rate = (t.size - 1) / t[-1]
    group_starts = np.concatenate([[0], np.flatnonzero(np.diff(t) > 0) + 1])
    a = report.arrival
    assert a["process"] == "batched"
    assert a["batch_size"] / a["period_s"] == pytest.approx(log_rate, rel=0.01)
    assert a["batch_size"] == pytest.approx(t.size / group_starts.size, rel=0.10)
    assert a["period_s"] == pytest.approx(3.0, rel=0.10)
    assert report.warnings == []
    rows_ = {r["stat"]: r for r in report.arrival_check["rows"]}
    for stat in ("rate (req/s)", "mean group size", "group period (s)"):
        assert abs(rows_[stat]["rel_diff"]) <= 0.10, rows_[stat]
    assert report.stat("requests", "gap CV").rel_diff == pytest.approx(0, abs=0.10)
    assert report.stat("gap between requests (s)", "p99").rel_diff == pytest.approx(0, abs=0.10)
    page = out.with_name("fit.fit.html").read_text()
    assert "The arrivals drawn over 8 seeds" in page and "<h3>Warnings</h3>" not in page


def test_the_bench_plan_agrees_over_seeds(mooncake) -> None:
    out, _, _ = mooncake
    s = load_scenario(out)
    counts = [len(build_schedule(s, seed).requests) for seed in range(8)]  # the fit block: 5 + 55 s at 2.5 req/s
    assert all(abs(n - 150) <= PLAN_SPREAD * 150 for n in counts), counts
    full = [len(build_schedule(s, seed, Overrides(full_scale=True, duration_s=600, warmup_s=0)).requests)
            for seed in range(8)]
    rate = s.arrival.batch_size / s.arrival.period_s
    assert all(abs(n - rate * 600) <= 0.10 * rate * 600 for n in full), full


def test_a_poisson_log_still_fits_to_poisson_gamma(tmp_path) -> None:
    rng = np.random.default_rng(3)
    t = gamma_times(rng, 3.0, 1.0, 3600.0)
    n_in, n_out = lognormal_lengths(rng, t.size, 800, 0.8), lognormal_lengths(rng, t.size, 150, 0.6)
    log = write_jsonl(tmp_path / "gw.jsonl", openai_rows(t, n_in, n_out))
    report = fit_logs(FitOptions(logs=(log,), out=tmp_path / "p.yaml", html=False))
    assert report.arrival["process"] == "gamma" and report.arrival["cv"] == pytest.approx(1.0, abs=0.1)
    assert report.warnings == [] and not any(n.startswith("arrivals:") for n in report.notes)


def test_a_family_that_misses_the_rate_is_refused_with_the_comparison() -> None:
    t = np.cumsum(np.random.default_rng(0).exponential(0.3, 10_000))
    absurd = {"process": "onoff", "on_rate_rps": 2048.0, "on_cv": 100.0, "on_s": 0.005, "off_s": 3.0}
    with pytest.raises(ScenarioError, match=r"reproduces this log over 8 seeds \(onoff: .*gap CV .* nothing was written"):
        choose(t, [absurd])
