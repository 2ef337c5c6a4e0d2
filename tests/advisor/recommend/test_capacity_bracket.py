"""A capacity that met its SLOs far below the first rate that failed is a lower bound, with the sweep that narrows it
(issue 39: capacity 5.18 req/s from a run at 5.55, the next step failing at 21.1, and no warning)."""

from __future__ import annotations

import socket

import pytest

from advisor.catalog import load_catalog
from advisor.recommend import Constraints, recommend
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
