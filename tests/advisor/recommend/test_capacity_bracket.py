"""A capacity that met its SLOs far below the first rate that failed is a lower bound, with the sweep that narrows it
(capacity 5.18 req/s from a run at 5.55, the next step failing at 21.1, once gave no warning); so is one whose
passing step is far inside its SLOs, at a smaller gap."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest

from advisor.catalog import load_catalog
from advisor.metrics.intervals import Interval
from advisor.recommend import Constraints, candidates, recommend
from tests.advisor.recommend.h200 import CHAT, SATURATED, copy_runs, load, this_cpu_vm


@pytest.fixture(autouse=True)
def _host_is_vm(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")


def _rec(root):
    return recommend(load(root), Constraints(scenario="chat", ttft_ms=2000, peak_rps=20), load_catalog(),
                     detected=this_cpu_vm())


def test_a_loose_bracket_makes_the_capacity_a_lower_bound_and_prints_the_sweep_that_narrows_it(tmp_path):
    rec = _rec(copy_runs(tmp_path, (CHAT, SATURATED)))
    c = rec.best.candidate
    assert c.capacity_is_lower_bound and c.capacity_failed_rps == pytest.approx(21.1, rel=0.01)
    assert any("a loose bracket: met at 5.18 req/s, failed at 21.1 (4.1x apart, over 1.5x)" in a for a in c.assumptions)
    [w] = [w for w in rec.warnings if "lower bound" in w]
    assert "met the SLOs at 5.18 req/s and failed at 21.1 req/s (4.1x apart)" in w
    assert "replicas are sized with 5.18 req/s" in w
    # three rates between the two, evenly spaced in ratio, with the run's workload flags (the same workload)
    assert "`advisor sweep --scenario chat --engine own --rates 7.36,10.4,14.8 --full-scale --max-input-tokens 3000`" in w
    assert rec.best.replicas == 5  # sized with the bound, as stated: ceil(20 x (1 + 0.2 headroom) / 5.18)


def test_a_tight_bracket_is_not_a_lower_bound(tmp_path):
    rec = _rec(copy_runs(tmp_path, (CHAT,)))  # no failing step at all: the old 'no higher rate' lower bound
    [w] = [w for w in rec.warnings if "lower bound" in w]
    assert "no higher rate was measured" in w and rec.best.candidate.capacity_failed_rps is None


def _option(**ms):
    return SimpleNamespace(latency={k: Interval.from_range(v, v, v, "") for k, v in ms.items()})


def test_far_inside_needs_every_set_limit_under_a_quarter():
    slos = {"ttft_ms": 2000.0, "tpot_ms": 100.0, "e2e_ms": None}
    assert candidates.far_inside(_option(ttft_ms=248.0, tpot_ms=9.0), slos)
    assert not candidates.far_inside(_option(ttft_ms=248.0, tpot_ms=30.0), slos)  # TPOT at 30% of its limit
    assert not candidates.far_inside(_option(ttft_ms=248.0), {"ttft_ms": None})  # no limit set: nothing to be inside


def test_a_step_far_inside_its_slos_makes_a_smaller_gap_loose(tmp_path, monkeypatch):
    # 4.1x is not loose by the plain rule here, but the passing step's TTFT (248 ms of 2,000) and TPOT are under 25%
    monkeypatch.setattr(candidates, "LOOSE_BRACKET", 5.0)
    c = _rec(copy_runs(tmp_path, (CHAT, SATURATED))).best.candidate
    assert c.capacity_is_lower_bound and c.capacity_failed_rps == pytest.approx(21.1, rel=0.01)
    assert any("every latency under 25% of its limit at 5.18 req/s" in a for a in c.assumptions)
    monkeypatch.setattr(candidates, "FAR_INSIDE", 0.01)  # not far inside: the 4.1x bracket is tight enough at 5x
    assert not _rec(copy_runs(tmp_path / "b", (CHAT, SATURATED))).best.candidate.capacity_is_lower_bound
