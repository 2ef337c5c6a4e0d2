"""Synthetic logs made with known parameters are recovered within 10%: rates, CV, on/off, a diurnal profile, sessions.

The logs of hours of traffic take seconds each to write and fit, so all but the sessions case are in the slow group.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scenarios.catalog import load_scenario
from scenarios.fit.fit import FitOptions, fit_logs
from tests.scenarios.fit.make_logs import (
    T0,
    diurnal_rate,
    diurnal_times,
    gamma_times,
    lognormal_lengths,
    onoff_times,
    write_csv,
    write_jsonl,
)


def _fit(tmp_path: Path, log: Path, **kw):
    out = tmp_path / "fitted.yaml"
    report = fit_logs(FitOptions(logs=(log,), out=out, html=False, **kw))
    return load_scenario(out), report


def _log(tmp_path: Path, t: np.ndarray, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed + 100)
    n_in, n_out = lognormal_lengths(rng, t.size, 800, 0.8), lognormal_lengths(rng, t.size, 120, 0.6)
    rows = [{"created": T0 + x, "usage": {"prompt_tokens": int(a), "completion_tokens": int(b)}}
            for x, a, b in zip(t.tolist(), n_in, n_out)]
    return write_jsonl(tmp_path / "log.jsonl", rows)


@pytest.mark.slow
@pytest.mark.parametrize(("rate", "cv"), [(4.0, 1.0), (3.0, 2.5), (5.0, 0.5)])
def test_gamma_rate_and_cv(tmp_path: Path, rate: float, cv: float) -> None:
    t = gamma_times(np.random.default_rng(1), rate, cv, 2.5 * 3600)  # over two hours: a profile is considered, refused
    s, r = _fit(tmp_path, _log(tmp_path, t))
    assert s.arrival.process == "gamma"
    assert s.arrival.rate_rps == pytest.approx(rate, rel=0.10)
    assert s.arrival.cv == pytest.approx(cv, rel=0.10)
    assert r.stat("requests", "gap CV").schedule == pytest.approx(cv, rel=0.10)


@pytest.mark.slow
def test_onoff_bursts(tmp_path: Path) -> None:
    t = onoff_times(np.random.default_rng(2), on_rate=10.0, on_s=30.0, off_s=60.0, phase_cv=0.3, duration_s=4 * 3600)
    s, r = _fit(tmp_path, _log(tmp_path, t))
    a = s.arrival
    assert a.process == "onoff"
    assert a.on_rate_rps == pytest.approx(10.0, rel=0.10)
    assert a.on_s == pytest.approx(30.0, rel=0.10) and a.off_s == pytest.approx(60.0, rel=0.10)
    assert a.on_cv == pytest.approx(1.0, rel=0.10)  # Poisson inside a burst
    assert a.phase_cv == pytest.approx(0.3, rel=0.15) and a.off_cv == pytest.approx(0.3, rel=0.15)
    assert a.on_rate_rps * a.on_s / (a.on_s + a.off_s) == pytest.approx(10 * 30 / 90, rel=0.10)
    assert r.stat("requests", "gap CV").schedule == pytest.approx(r.stat("requests", "gap CV").log, rel=0.10)


@pytest.mark.slow
def test_diurnal_profile_is_followed(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    t = diurnal_times(rng, mean=1.5, amplitude=1.0, duration_s=86400)
    n_in, n_out = lognormal_lengths(rng, t.size, 500, 0.7), lognormal_lengths(rng, t.size, 80, 0.5)
    log = write_csv(tmp_path / "day.csv", ["time", "prompt_tokens", "completion_tokens"],  # a metrics-store export
                    [[f"{T0 + x:.3f}", a, b] for x, a, b in zip(t, n_in, n_out)])
    s, r = _fit(tmp_path, log, duration_s=86400)
    a = s.arrival
    assert a.process == "profile" and a.span_s == pytest.approx(86400, rel=0.01)
    assert a.cv == pytest.approx(1.0, rel=0.10)  # Poisson once the curve is divided out
    hours = np.arange(24) * 3600.0
    steps = np.array(a.rates_rps)
    for h in hours:  # each hour of the fitted curve against the true curve's mean over that hour
        sel = (np.arange(steps.size) * a.step_s >= h) & (np.arange(steps.size) * a.step_s < h + 3600)
        truth = diurnal_rate(np.linspace(h, h + 3600, 361), 1.5, 1.0).mean()
        assert steps[sel].mean() == pytest.approx(truth, rel=0.10), f"hour {h / 3600:.0f}"
    assert r.stat("rate curve", "mean abs. deviation").schedule < 0.10


def test_sessions(tmp_path: Path) -> None:
    """Conversations: 0.2 new sessions/s, 4 turns on average, 10 s think time after each answer."""
    rng = np.random.default_rng(4)
    rows = []
    starts = gamma_times(rng, 0.2, 1.0, 2 * 3600)
    for k, t in enumerate(starts):
        n_turns = rng.geometric(0.25)
        n_in = int(rng.integers(100, 400))
        for _ in range(n_turns):
            n_out = int(rng.integers(20, 200))
            latency = float(rng.uniform(1.0, 3.0))
            rows.append({"timestamp": T0 + t, "conversation_id": f"conv-{k}", "latency_ms": latency * 1000,
                         "usage": {"input_tokens": n_in, "output_tokens": n_out}})
            t += latency + rng.exponential(10.0)
            n_in += n_out + int(rng.integers(10, 90))  # the history plus a new message of 50 tokens on average
    rows.sort(key=lambda r: r["timestamp"])
    s, r = _fit(tmp_path, write_jsonl(tmp_path / "chat.jsonl", rows))
    assert s.sessions is not None
    assert r.sessions is not None and r.sessions["sessions"] == starts.size
    assert s.sessions.rate_rps == pytest.approx(0.2, rel=0.10)
    assert r.sessions["turns"].mean == pytest.approx(4.0, rel=0.10)
    assert s.sessions.think_s == pytest.approx(10.0, rel=0.10)
    assert r.sessions["growth_share"] == 1.0
    assert r.sessions["new_tokens"].mean == pytest.approx(50.0, rel=0.10)
    assert s.sessions.turns.dist in ("lognormal", "uniform")
    assert s.arrival is None and s.sessions.cv == pytest.approx(1.0, rel=0.10)  # the sessions drive the arrivals
    assert r.sessions["replayed"] and any("comparison draws the fitted lengths as independent" in n for n in r.notes)
