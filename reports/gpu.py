"""Per GPU run, what a buyer looks at: the GPU, memory used of its total, power, utilisation, energy and its cost.

Figures are the run's own NVML telemetry (`advisor.telemetry.gpu`); nothing is estimated. Energy cost
per 1M output tokens = J per output token x 1e6 / 3.6e6 J/kWh x $/kWh: the GPU board's energy only
(no host, no cooling: multiply by a PUE for the facility), at the $/kWh given (`--usd-per-kwh`) or the
hardware catalog's stated owned-TCO electricity price, whose source is shown. Whether the run was
host-bound (`advisor.recommend.bound`) is said beside its utilisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from advisor.saved.store import RunResult

J_PER_KWH = 3.6e6


def default_usd_per_kwh() -> tuple[float, str]:
    """The catalog's stated electricity price and its source."""
    from advisor.catalog import load_catalog

    owned = load_catalog().owned
    return owned.power_usd_per_kwh, f"hardware catalog owned-TCO assumption ({owned.as_of}): {owned.source}"


def energy_usd_per_1m(j_per_output_token: float | None, usd_per_kwh: float) -> float | None:
    if j_per_output_token is None:
        return None
    return float(j_per_output_token) * 1e6 / J_PER_KWH * usd_per_kwh


def _bound(run: RunResult) -> str:
    from advisor.catalog import load_catalog
    from advisor.hardware.detect import map_machine
    from advisor.recommend.bound import classify

    hw = map_machine((run.manifest or {}).get("hardware") or {}, load_catalog()).hardware
    return classify(run, hw).bound


def gpu_table(runs: Sequence[RunResult], labels: dict[str, str], usd_per_kwh: float | None = None) -> dict[str, Any]:
    """{"rows": [...], "usd_per_kwh": x, "price_source": text}; rows only for runs with GPU telemetry."""
    if usd_per_kwh is None:
        usd_per_kwh, source = default_usd_per_kwh()
    else:
        source = "given with --usd-per-kwh"
    rows = []
    for run in runs:
        g = run.telemetry.gpu
        if not g:
            continue
        gpus = ((run.manifest or {}).get("hardware") or {}).get("gpus") or []
        name = str(g.get("gpu") or (gpus[0].get("name") if gpus else "GPU"))
        j = g.get("j_per_output_token")
        rows.append({"run_id": run.run_id, "label": labels.get(run.run_id, run.run_id), "gpu": name,
                     "n_gpus": len(gpus) or 1, "mem_peak_mb": g.get("memory_used_peak_mb"),
                     "mem_total_mb": g.get("memory_total_mb"), "power_mean_w": g.get("power_w_mean"),
                     "power_max_w": g.get("power_w_max"), "util_pct": g.get("util_pct_mean"),
                     "j_per_output_token": j, "energy_usd_per_1m_out": energy_usd_per_1m(j, usd_per_kwh),
                     "bound": _bound(run), "energy_note": g.get("energy_note") or ""})
    return {"rows": rows, "usd_per_kwh": usd_per_kwh, "price_source": source}
