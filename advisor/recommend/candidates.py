"""Candidate deployments: measured (from saved runs) and estimated (roofline on catalog hardware).

A measured candidate's capacity per replica is the highest achieved request rate among
its VALID runs whose percentile latencies meet the effective SLOs (a sweep's runs are
just runs); an estimated one comes from `advisor.roofline.estimate`, calibrated on the
measured runs of the same engine where there are any.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from advisor.catalog import Catalog, Hardware
from advisor.recommend.constraints import Constraints
from advisor.roofline import ModelShape, Workload, calibrate, estimate

_SLO_KEYS = ("ttft_ms", "tpot_ms", "e2e_ms")


@dataclass(frozen=True)
class Candidate:
    engine: str
    hardware_id: str
    config: str  # precision / format / batching as recorded
    model: str
    source: Literal["measured", "estimated"]
    run_id: str | None  # the run that sets capacity (measured) or the one extrapolated from (estimated)
    devices: int  # per replica
    capacity_rps: float | None  # per replica, under the effective SLOs; None: never met them
    latency_ms: dict[str, float | None]  # p-th percentile TTFT/TPOT/E2E at that capacity (or lowest rate)
    slos: dict[str, float | None]  # effective limits
    input_tokens_per_request: float
    output_tokens_per_request: float
    precision: str = ""
    assumptions: tuple[str, ...] = ()
    n_params: float | None = None

    @property
    def slo_margin_ms(self) -> dict[str, float]:
        return {k: lim - v for k, lim in self.slos.items() if lim is not None
                and (v := self.latency_ms.get(k)) is not None}

    @property
    def min_margin_frac(self) -> float | None:
        fr = [m / lim for k, m in self.slo_margin_ms.items() if (lim := self.slos[k])]
        return min(fr) if fr else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "slo_margin_ms": self.slo_margin_ms}


@dataclass(frozen=True)
class MeasuredRun:
    run: dict[str, Any]
    hardware: Hardware | None  # None: could not map the machine to the catalog
    notes: tuple[str, ...] = field(default=())


def _pct_key(percentile: float) -> str:
    return {50.0: "p50", 90.0: "p90", 95.0: "p95", 99.0: "p99", 99.9: "p99_9"}.get(float(percentile), "p95")


def _latencies(summary: dict[str, Any], pkey: str) -> dict[str, float | None]:
    return {k: (summary.get(k) or {}).get(pkey) for k in _SLO_KEYS}


def meets(lat: dict[str, float | None], slos: dict[str, float | None]) -> bool:
    """Every set limit is met by a known percentile (an unknown percentile does not pass)."""
    for k, lim in slos.items():
        v = lat.get(k)
        if lim is not None and (v is None or v > lim):
            return False
    return True


def config_of(engine: dict[str, Any]) -> str:
    parts = [engine.get("precision"), engine.get("format"), engine.get("batching")]
    if engine.get("threads"):
        parts.append(f"{engine['threads']} threads")
    return " / ".join(str(p) for p in parts if p) or "default"


def _tokens(summary: dict[str, Any]) -> tuple[float, float]:
    n = summary.get("n_ok") or 0
    if n <= 0:
        return 0.0, 0.0
    return float(summary.get("n_in_total") or 0) / n, float(summary.get("n_out_total") or 0) / n


def measured_candidates(runs: list[MeasuredRun], c: Constraints) -> list[Candidate]:
    """One candidate per (engine, model, config, hardware), from its best SLO-meeting VALID run."""
    groups: dict[tuple[str, str, str, str], list[MeasuredRun]] = defaultdict(list)
    for mr in runs:
        e = mr.run["engine"]
        hw_id = mr.hardware.id if mr.hardware else "custom"
        groups[(str(e.get("adapter") or e.get("engine")), str(e.get("model")), config_of(e), hw_id)].append(mr)
    pkey = _pct_key(c.percentile)
    out = []
    for (engine, model, config, hw_id), members in groups.items():
        best, closest = None, None
        for mr in members:
            s, slos = mr.run["summary"], c.slos_for(mr.run.get("slos") or {})
            lat = _latencies(s, pkey)
            valid = (mr.run.get("verdict") or {}).get("status") == "VALID"
            if valid and meets(lat, slos) and (best is None or s["requests_per_s"] > best[0]["summary"]["requests_per_s"]):
                best = (mr.run, lat, slos)
            if closest is None or (s.get("requests_per_s") or 0) < (closest[0]["summary"].get("requests_per_s") or 0):
                closest = (mr.run, lat, slos)
        chosen = best or closest
        assert chosen is not None  # every group has at least one run
        run, lat, slos = chosen
        n_in, n_out = _tokens(run["summary"])
        shape = ModelShape.from_engine(run["engine"])
        notes = [f"measured: run {run['run_id']} ({(run.get('verdict') or {}).get('status')})"]
        if best is None:
            notes.append(f"no VALID run met the SLOs; closest is the lowest-rate run ({run['summary'].get('requests_per_s', 0):.3g} req/s)")
        else:
            notes.append(f"capacity = highest measured rate meeting the SLOs ({run['summary']['requests_per_s']:.3g} req/s); "
                         "a sweep to higher rates may find more")
        out.append(Candidate(engine=engine, hardware_id=hw_id, config=config, model=model, source="measured",
                             run_id=run["run_id"], devices=1,
                             capacity_rps=float(run["summary"]["requests_per_s"]) if best else None,
                             latency_ms=lat, slos=slos, input_tokens_per_request=n_in, output_tokens_per_request=n_out,
                             precision=str(run["engine"].get("precision") or ""), assumptions=tuple(notes),
                             n_params=shape.n_params if shape else None))
    return out


def estimated_candidates(runs: list[MeasuredRun], c: Constraints, catalog: Catalog) -> list[Candidate]:
    """Roofline extrapolation of each measured (engine, model, config) to the catalog hardware it was not run on."""
    calib_all = [(mr.run, mr.hardware) for mr in runs if mr.hardware is not None]
    by_key: dict[tuple[str, str, str], list[MeasuredRun]] = defaultdict(list)
    for mr in runs:
        e = mr.run["engine"]
        by_key[(str(e.get("adapter") or e.get("engine")), str(e.get("model")), config_of(e))].append(mr)
    out = []
    for (engine, model, config), members in by_key.items():
        ops = catalog.engine_ops(engine)
        own = [(mr.run, mr.hardware) for mr in members if mr.hardware is not None]
        eff = calibrate(own)
        if eff.basis.startswith("default"):
            eff = calibrate(calib_all)
        # prefer a VALID run, then the one with the most requests
        base = max(members, key=lambda mr: ((mr.run.get("verdict") or {}).get("status") == "VALID",
                                            mr.run["summary"].get("n_ok") or 0)).run
        shape, wl = ModelShape.from_engine(base["engine"]), Workload.from_summary(base["summary"])
        if shape is None or wl is None:
            continue
        measured_on = {mr.hardware.id for mr in members if mr.hardware is not None}
        status = (base.get("verdict") or {}).get("status")
        weak = (f"extrapolated from a run whose verdict is {status}: treat with extra caution",) if status != "VALID" else ()
        slos = c.slos_for(base.get("slos") or {})
        for hw in catalog.hardware.values():
            if hw.id in measured_on or hw.measured or hw.peak_tflops(shape.dtype_bytes) is None:
                continue
            if ops is not None and hw.kind not in ops.hardware:
                continue
            est = estimate(shape, hw, wl, eff, slos.get("ttft_ms"), slos.get("tpot_ms"))
            lat: dict[str, float | None] = {"ttft_ms": est.ttft_p_ms, "tpot_ms": est.tpot_p_ms,
                   "e2e_ms": est.ttft_p_ms + max(wl.n_out - 1, 0) * est.tpot_p_ms}
            notes = (f"estimated from run {base['run_id']}", *weak, *est.assumptions,
                     f"served at the measured precision ({base['engine'].get('precision')})")
            out.append(Candidate(engine=engine, hardware_id=hw.id, config=config, model=model, source="estimated",
                                 run_id=base["run_id"], devices=est.devices, capacity_rps=est.capacity_rps,
                                 latency_ms=lat, slos=slos, input_tokens_per_request=wl.n_in,
                                 output_tokens_per_request=wl.n_out, precision=str(base["engine"].get("precision") or ""),
                                 assumptions=notes, n_params=shape.n_params))
    return out
