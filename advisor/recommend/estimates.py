"""Estimated candidates: each measured (engine, model, config) extrapolated by the roofline to catalog hardware.

Only to hardware the engine can run on (a sourced claim for that hardware's software stack in
engines.yaml); a row where neither advisor nor these runs ever ran the engine on that stack is
"untested there" and never headlines. Calibration and error bar come from one place, the
estimator backtest (`error_bars.py`): "calibrated" only with a backtest of at least two VALID,
device-bound runs of the engine on the same device class, whose worst miss is the row's range.
The operating point is chosen so the pessimistic end of each range meets its SLO, so an error
factor larger than the SLO margin can absorb leaves no capacity: such an estimate fails, and
cannot headline. A served engine (an endpoint client) is never extrapolated: the engine behind
the endpoint is unknown.
"""

from __future__ import annotations

from collections import defaultdict

from advisor.catalog import Catalog, Hardware
from advisor.metrics.intervals import Interval
from advisor.recommend.bound import HOST_PATH, classify
from advisor.recommend.candidates import Candidate, Evidence, MeasuredRun, config_of, engine_of
from advisor.recommend.constraints import Constraints
from advisor.recommend.error_bars import ErrorBar, EstimatorBacktest, default_bar
from advisor.roofline import (
    DEFAULT,
    DEFAULT_EFFICIENCY,
    Efficiency,
    ModelShape,
    Workload,
    calibrate,
    devices_needed,
    estimate,
)
from advisor.store import RunResult


def host_bound_only(members: list[MeasuredRun], kind: str) -> list[str]:
    """The runs on `kind` hardware when every VALID one of them is host-bound (else empty)."""
    on = [mr for mr in members if mr.hardware is not None and mr.hardware.kind == kind
          and mr.run.verdict.status == "VALID"]
    if on and all(classify(mr.run, mr.hardware).bound == "host-bound" for mr in on if mr.hardware is not None):
        return [mr.run.run_id for mr in on]
    return []


ASSUMED = "assumed efficiency"  # in the evidence note of an estimate that no run calibrates


def assumed_efficiency(c: Candidate) -> bool:
    """The estimate rests on the roofline's assumed efficiency (DEFAULT_EFFICIENCY), not on any measured run."""
    return c.source == "estimated" and ASSUMED in c.evidence_note


def _measured_efficiency(members: list[MeasuredRun]) -> str:
    """'; the measured run reached 11% in decode on h200': the median over the VALID runs ('' when none has one)."""
    found = sorted((e, mr.hardware.id) for mr in members if mr.hardware is not None
                   and mr.run.verdict.status == "VALID"
                   and (e := classify(mr.run, mr.hardware).decode_efficiency) is not None)
    if not found:
        return ""
    e, hw_id = found[len(found) // 2]
    return f"; the measured run{'s' if len(found) > 1 else ''} reached {e:.0%} in decode on {hw_id}"


def _calibration(bt: EstimatorBacktest, engine: str, kind: str, members: list[MeasuredRun]
                 ) -> tuple[Efficiency, Evidence, str, ErrorBar]:
    """The efficiency an estimate on `kind` hardware uses, what that makes it, what it rests on, its error bar."""
    same = bt.pool(engine, kind)
    other = [(k[1], p) for k, p in bt.pools.items() if k[0] == engine and k[1] != kind and p]
    calib = same or [x for _, p in other for x in p]
    eff = calibrate(calib)
    bar = bt.bar(engine, kind)
    if bar is not None:
        return eff, "calibrated", f"calibrated on {len(same)} VALID device-bound {kind.upper()} run(s)", bar
    if eff.basis == DEFAULT.basis:  # no run could calibrate it: the efficiency is assumed
        note = (f"uncalibrated: no run calibrates it, so it rests on an {ASSUMED} of {DEFAULT_EFFICIENCY:.0%} of "
                f"the roofline's ideal speed (an assumption, not a measurement){_measured_efficiency(members)}")
    elif same:
        note = (f"uncalibrated: extrapolated from {len(same)} VALID device-bound {kind.upper()} run: with fewer than "
                "two there is no backtest, so its error is unknown")
    else:
        classes = ", ".join(sorted({k.upper() for k, _ in other}))
        note = f"uncalibrated for {kind.upper()}: calibrated on {classes} runs only (another device class)"
    return eff, "uncalibrated", note, default_bar(note)


def _tested(engine: str, hw: Hardware, catalog: Catalog, runs: list[MeasuredRun]) -> tuple[bool, str]:
    ops = catalog.engine_ops(engine)
    claim = ops.claim(hw.stack) if ops is not None else None
    ran_here = any(engine_of(mr.run) == engine and mr.hardware is not None and mr.hardware.stack == hw.stack
                   for mr in runs)
    if ran_here:
        return True, f"{engine} was measured on {hw.stack} in these runs"
    if claim is not None and claim.advisor_ran:
        return True, f"advisor ran {engine} on {hw.stack}: {claim.advisor_ran}"
    src = f" ({claim.source}, {claim.as_of})" if claim is not None else ""
    return False, f"untested there: {engine} should run on {hw.stack}{src}, but advisor never ran it there"


def can_run(engine: str, hw: Hardware, catalog: Catalog) -> bool:
    """A sourced claim that `engine` runs on `hw`'s software stack exists (an engine not in the catalog: no claim)."""
    ops = catalog.engine_ops(engine)
    return ops is not None and ops.claim(hw.stack) is not None


def estimated_candidates(runs: list[MeasuredRun], c: Constraints, catalog: Catalog, bt: EstimatorBacktest,
                         all_runs: list[MeasuredRun] | None = None, skipped: list[str] | None = None) -> list[Candidate]:
    """Roofline extrapolation of each measured (engine, model, config) to the catalog hardware it was not run on.

    No estimate is made on a device class whose every VALID run of the engine was host-bound and which no
    device-bound run calibrates: the roofline would promise the device's speed where the host set it. Why
    goes into `skipped`."""
    by_key: dict[tuple[str, str, str], list[MeasuredRun]] = defaultdict(list)
    for mr in runs:
        e = mr.run.engine
        by_key[(engine_of(mr.run), str(e.model), config_of(e))].append(mr)
    out = []
    for (engine, model, config), members in by_key.items():
        ops = catalog.engine_ops(engine)
        if ops is None or ops.served or any(mr.served for mr in members):
            continue  # an endpoint's engine is unknown: nothing to extrapolate
        if all(mr.hardware is not None and mr.hardware.unlisted for mr in members):
            continue  # an unlisted GPU has no peaks: nothing can be extrapolated from its runs
        # prefer a VALID run, then the one with the most requests
        base = max(members, key=lambda mr: (mr.run.verdict.status == "VALID", mr.run.summary.n_ok)).run
        shape, wl = ModelShape.from_engine(base.engine), Workload.from_summary(base.summary)
        if shape is None or wl is None:
            continue
        measured_on = {mr.hardware.id for mr in members if mr.hardware is not None}
        slos = c.slos_for(base.slos)
        host_only = {k: ids for k in ("gpu", "cpu") if (ids := host_bound_only(members, k)) and not bt.pool(engine, k)}
        for kind, ids in host_only.items():
            if skipped is not None:
                skipped.append(f"no roofline estimate of {engine} on other {kind.upper()}s: its {kind.upper()} run(s) "
                               f"({', '.join(ids)}) were host-bound: they measured {HOST_PATH}, so a faster GPU need "
                               "not be faster; a device-bound run (GPU busy >= 70%) would allow an estimate")
        for hw in catalog.hardware.values():
            if hw.kind in host_only:
                continue
            if hw.id in measured_on or hw.measured or hw.peak_tflops(shape.dtype_bytes) is None:
                continue
            if not can_run(engine, hw, catalog):
                continue  # no row on hardware the engine cannot run on
            if devices_needed(shape, hw) is None:  # no size to estimate: its latency would be unbounded
                if skipped is not None:
                    skipped.append(f"cannot be estimated: {engine} on {hw.id}: the weights "
                                   f"({shape.weight_bytes / 1e9:.1f} GB) do not fit its {hw.memory_gb:g} GB")
                continue
            eff, evidence, note, bar = _calibration(bt, engine, hw.kind, members)
            tested, why = _tested(engine, hw, catalog, all_runs or runs)
            out.append(_estimated(engine, model, config, base, shape, wl, hw, eff, bar, slos, evidence, note,
                                  tested, why))
    return out


def _limit(slo: float | None, factor: float) -> float | None:
    return None if slo is None else slo / factor


def _estimated(engine: str, model: str, config: str, base: RunResult, shape: ModelShape, wl: Workload,
               hw: Hardware, eff: Efficiency, bar: ErrorBar, slos: dict[str, float | None], evidence: Evidence,
               note: str, tested: bool, tested_why: str) -> Candidate:
    # the operating point is chosen so that the pessimistic end of each range meets its SLO
    est = estimate(shape, hw, wl, eff, _limit(slos.get("ttft_ms"), bar.ttft_factor),
                   _limit(slos.get("tpot_ms"), bar.tpot_factor))
    e2e = est.ttft_p_ms + max(wl.n_out - 1, 0) * est.tpot_p_ms
    lat: dict[str, float | None] = {"ttft_ms": est.ttft_p_ms, "tpot_ms": est.tpot_p_ms, "e2e_ms": e2e}
    ranges = {k: bar.range(k, v) for k, v in lat.items() if v is not None and v != float("inf")}
    cap_range = None
    if est.capacity_rps:
        f = bar.rate_factor
        cap_range = Interval.from_range(est.capacity_rps, est.capacity_rps / f, est.capacity_rps * f,
                                        f"x/÷{f:.2f}: {bar.basis}")
    notes = (f"estimated from run {base.run_id}", note, tested_why, f"error bars: {bar.basis}", *est.assumptions,
             f"served at the measured precision ({base.engine.precision})")
    return Candidate(engine=engine, hardware_id=hw.id, config=config, model=model, source="estimated",
                     run_id=base.run_id, devices=est.devices, capacity_rps=est.capacity_rps,
                     latency_ms=lat, slos=slos, input_tokens_per_request=wl.n_in,
                     output_tokens_per_request=wl.n_out, precision=str(base.engine.precision or ""),
                     assumptions=notes, n_params=shape.n_params, evidence=evidence, evidence_note=note,
                     capacity_range=cap_range, latency_range_ms=ranges, repeats=0, scenario=base.scenario_name or "",
                     device_class=hw.kind, tested_there=tested, error_factor=bar.rate_factor)
