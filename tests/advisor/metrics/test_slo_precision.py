"""SLO values are shown at the precision that decided them (0.87 ms against a 0.8 ms limit is not "1 > 1")."""

from __future__ import annotations

from advisor.metrics.support import SloCheck


def _failed(observed_ms: float, limit_ms: float) -> str:
    return SloCheck("tpot_ms", 95.0, limit_ms, 120, 30, True, observed_ms, "failed", 0).text()


def test_a_failed_slo_shows_the_digits_that_decided_it():
    assert _failed(0.87, 0.8).startswith("p95 TPOT failed: 0.9 ms > 0.8 ms")
    assert _failed(100.4, 100.0).startswith("p95 TPOT failed: 100.4 ms > 100.0 ms")
    assert _failed(1234.6, 1000.0).startswith("p95 TPOT failed: 1235 ms > 1000 ms")
