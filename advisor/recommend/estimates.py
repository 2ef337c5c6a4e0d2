"""Estimated candidates: each measured (engine, model, config) extrapolated by the roofline to catalog hardware.

An estimate rests on measured runs only, never on an assumed efficiency: its base (the run whose
workload and model are extrapolated) is an eligible run (`error_bars.ineligible`: VALID, device-bound
or CPU), and its efficiency is calibrated on eligible runs of the same engine and model shape.
Only to hardware the engine can run on (a sourced claim for that hardware's software stack in
engines.yaml); a row where neither advisor nor these runs ever ran the engine on that stack is
"untested there" and never headlines. Calibration and error bar come from one place, the
estimator backtest (`error_bars.py`): "calibrated" only with a backtest of at least two such runs
on the same device class, whose worst miss is the row's range. The operating point is chosen so
the pessimistic end of each range meets its SLO, so an error factor larger than the SLO margin
can absorb leaves no capacity: such an estimate fails, and cannot headline. A served engine (an
endpoint client) is never extrapolated: the engine behind the endpoint is unknown. Hardware that
gets no row gets a `NoRow` reason instead.
"""

from __future__ import annotations

import re
from collections import defaultdict

from advisor.catalog import Catalog, Hardware
from advisor.metrics.intervals import Interval
from advisor.recommend.bound import HOST_PATH, classify
from advisor.recommend.candidates import Candidate, Evidence, MeasuredRun, config_of, engine_of
from advisor.recommend.constraints import Constraints
from advisor.recommend.error_bars import ErrorBar, EstimatorBacktest, default_bar, ineligible
from advisor.recommend.no_row import NoRow
from advisor.saved.store import RunResult
from advisor.sizing.roofline import Efficiency, ModelShape, Workload, calibrate, devices_needed, estimate

CANNOT = "cannot be estimated"  # the start of every reason an estimate that would rest on no measurement is not made


def host_bound_only(members: list[MeasuredRun], kind: str) -> list[str]:
    """The runs on `kind` hardware when every VALID one of them is host-bound (else empty)."""
    on = [mr for mr in members if mr.hardware is not None and mr.hardware.kind == kind
          and mr.run.verdict.status == "VALID"]
    if on and all(classify(mr.run, mr.hardware).bound == "host-bound" for mr in on if mr.hardware is not None):
        return [mr.run.run_id for mr in on]
    return []


def _calibration(bt: EstimatorBacktest, engine: str, kind: str, shape: ModelShape
                 ) -> tuple[Efficiency, Evidence, str, ErrorBar] | str:
    """The efficiency an estimate of `shape` on `kind` hardware uses, what that makes it, what it rests on and its
    error bar; or why there is none (no eligible run of this engine and model shape calibrates it)."""
    same = bt.pool(engine, kind, shape)
    other = [(k[1], p) for k, p in bt.pools.items() if k[0] == engine and k[2] == shape and k[1] != kind and p]
    eff = calibrate(same or [x for _, p in other for x in p])
    if eff is None:
        return (f"{CANNOT}: no VALID device-bound or CPU run of {engine} on this model ({shape.label}) calibrates the "
                "roofline, and no efficiency is assumed")
    bar = bt.bar(engine, kind, shape)
    if bar is not None:
        return eff, "calibrated", f"calibrated on {len(same)} VALID device-bound {kind.upper()} run(s)", bar
    if same:
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


def _short(why: str) -> str:
    """'host-bound (GPU busy 49% ...): it measured ...' -> 'host-bound': an ineligibility reason's first words."""
    return re.split(r" \(|:", why, maxsplit=1)[0]


def _group_blocked(engine: str, members: list[MeasuredRun], catalog: Catalog) -> str | None:
    """Why nothing of this (engine, model, config) is extrapolated to any hardware (None: it may be)."""
    ops = catalog.engine_ops(engine)
    if ops is None:
        return f"{engine} is not in engines.yaml, so there is no claim of where it runs"
    if ops.served or any(mr.served for mr in members):
        return "served from an endpoint: the engine behind it is unknown, so nothing is extrapolated"
    if all(mr.hardware is not None and mr.hardware.unlisted for mr in members):
        return "measured on an unlisted GPU only: it has no catalog peaks, so nothing is extrapolated from it"
    return None


def _hardware_blocked(engine: str, hw: Hardware, catalog: Catalog, shape: ModelShape | None) -> str | None:
    """Why `engine` gets no row on `hw` whatever was measured (None: it may)."""
    if not can_run(engine, hw, catalog):
        return f"{engine} has no claim to run on {hw.stack} (engines.yaml)"
    if shape is not None and hw.peak_tflops(shape.dtype_bytes) is None:
        return f"no dense peak TFLOPS for {shape.dtype_bytes:g}-byte weights in the catalog"
    return None


def estimated_candidates(runs: list[MeasuredRun], c: Constraints, catalog: Catalog, bt: EstimatorBacktest,
                         all_runs: list[MeasuredRun] | None = None, no_row: list[NoRow] | None = None
                         ) -> list[Candidate]:
    """Roofline extrapolation of each measured (engine, model, config) to the catalog hardware it was not run on.

    No estimate rests on an assumed efficiency, on a run that is not eligible (INVALID, SATURATED, host-bound),
    or on a device class whose every VALID run of the engine was host-bound and which no device-bound run
    calibrates (the roofline would promise the device's speed where the host set it). Every catalog hardware
    left without a row of a (engine, model, config) gets a reason in `no_row`."""
    by_key: dict[tuple[str, str, str], list[MeasuredRun]] = defaultdict(list)
    for mr in runs:
        e = mr.run.engine
        by_key[(engine_of(mr.run), str(e.model), config_of(e))].append(mr)
    out = []
    reasons: list[NoRow] = [] if no_row is None else no_row
    for (engine, model, config), members in by_key.items():
        subject = f"{engine} ({model.rstrip('/').rsplit('/', 1)[-1]}, {config})"
        measured_on = {mr.hardware.id for mr in members if mr.hardware is not None}
        targets = [hw for hw in catalog.hardware.values()
                   if hw.id not in measured_on and not hw.measured and not hw.unlisted]
        eligible = [mr for mr in members if ineligible(mr) is None]
        # the base: an eligible run (VALID, device-bound or CPU), the one with the most requests
        base = max(eligible, key=lambda mr: mr.run.summary.n_ok).run if eligible else None
        shape = ModelShape.from_engine(base.engine) if base is not None else None
        wl = Workload.from_summary(base.summary) if base is not None else None
        blocked = _group_blocked(engine, members, catalog)
        if blocked is None and (base is None or shape is None or wl is None):
            runs_why = "; ".join(f"run {mr.run.run_id}: {_short(w)}" for mr in members if (w := ineligible(mr)))
            hint = (f"; a host-bound run measured {HOST_PATH}: a device-bound run (GPU busy >= 70%) would allow an "
                    "estimate") if "host-bound" in runs_why else ""
            blocked = (f"{CANNOT}: none of its runs is VALID and device-bound (or on a CPU), and an estimate rests on "
                       f"no other ({runs_why}){hint}")
        host_only = {k: ids for k in ("gpu", "cpu")
                     if (ids := host_bound_only(members, k)) and shape is not None and not bt.pool(engine, k, shape)}
        slos = c.slos_for(base.slos) if base is not None else {}
        for hw in targets:
            why = _hardware_blocked(engine, hw, catalog, shape) or blocked
            if why is None and hw.kind in host_only:
                k = hw.kind.upper()
                why = (f"{CANNOT}: its {k} run(s) ({', '.join(host_only[hw.kind])}) were host-bound: they measured "
                       f"{HOST_PATH}, so a faster {k} need not be faster; a device-bound run (GPU busy >= 70%) "
                       "would allow an estimate")
            if why is None and shape is not None and devices_needed(shape, hw) is None:
                why = f"{CANNOT}: the weights ({shape.weight_bytes / 1e9:.1f} GB) do not fit its {hw.memory_gb:g} GB"
            cal = _calibration(bt, engine, hw.kind, shape) if why is None and shape is not None else why
            if isinstance(cal, str) or cal is None:
                reasons.append(NoRow(subject, hw.id, str(cal)))
                continue
            assert base is not None and shape is not None and wl is not None
            eff, evidence, note, bar = cal
            tested, tested_why = _tested(engine, hw, catalog, all_runs or runs)
            out.append(_estimated(engine, model, config, base, shape, wl, hw, eff, bar, slos, evidence, note,
                                  tested, tested_why))
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
                     device_class=hw.kind, tested_there=tested, error_factor=bar.rate_factor,
                     evidence_class="extrapolated from a run")
