"""Candidates: the deployment type, and the measured ones (from saved runs); estimated ones are in `estimates.py`.

A measured candidate's capacity per replica is the highest achieved request rate among its VALID
options (repeat groups, `options.py`) whose SLOs are established as met, on the hardware the run
measured (`machines.py`), with that machine's GPUs as devices per replica.

Every candidate says what its numbers rest on (`evidence`): only `measured` and `calibrated`
candidates may carry a headline recommendation (an estimate also only where the engine was run on
that hardware's stack); `uncalibrated` ones only when the user asks for them, `invalid` ones never.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from adapters.base import EngineInfo
from advisor.catalog import Hardware
from advisor.catalog.cost import tokens_per_request
from advisor.metrics.intervals import Interval
from advisor.metrics.slo_evidence import RunSample
from advisor.recommend.bound import classify
from advisor.recommend.constraints import Constraints
from advisor.recommend.options import MeasuredOption, best_and_closest, options
from advisor.run.rates import offered_rps
from advisor.saved.store import RunResult
from advisor.sizing.roofline import ModelShape
from fileform import FileForm

UNKNOWN_SERVER = "unknown hardware"  # a served run whose server hardware was not declared
UNLISTED_CPU = "unlisted-cpu"  # a CPU machine the catalog lacks (and not this one)
Evidence = Literal["measured", "calibrated", "uncalibrated", "invalid"]
# where a row's figures come from, as the headline names it (docs/recommend.md)
EvidenceClass = Literal["measured here", "measured on recorded hardware", "measured on declared hardware",
                        "estimated from tables", "transferred", "extrapolated from a run"]
HEADLINE_EVIDENCE: tuple[Evidence, ...] = ("measured", "calibrated")


@dataclass(frozen=True)
class Candidate(FileForm):
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
    evidence: Evidence = "measured"
    evidence_note: str = ""  # one line: what the numbers rest on
    capacity_range: Interval | None = None  # repeats' interval (measured) or error range (estimated)
    latency_range_ms: dict[str, Interval] = field(default_factory=dict)
    slo_checks: tuple[dict[str, Any], ...] = ()  # measured: SloCheck.to_dict() per set SLO
    repeats: int = 1  # runs behind a measured figure
    group_id: str | None = None
    scenario: str = ""
    device_class: str = ""  # "cpu" / "gpu" of the hardware ("" when not in the catalog)
    hardware_problem: str = ""  # why this row sizes and prices nothing (unknown server hardware), with the fix
    tested_there: bool = True  # estimated: advisor (or these runs) ran the engine on this hardware's stack
    error_factor: float | None = None  # estimated: the larger of its TTFT / TPOT error factors
    bound: str = ""  # measured: device-bound / host-bound / unclear / cpu (`bound.py`), with its figures
    run_durations_s: tuple[float, ...] = ()  # measured: the measurement window of each run behind the capacity
    capacity_is_lower_bound: bool = False  # measured: no higher rate failed, or the next one failed far above
    capacity_failed_rps: float | None = None  # measured, open loop: the lowest offered rate above it that failed
    evidence_class: EvidenceClass = "measured here"

    @property
    def slo_margin_ms(self) -> dict[str, float]:
        """Limit minus the percentile (for an estimate: minus the high end of its range)."""
        return {k: lim - v for k, lim in self.slos.items() if lim is not None
                and (v := self.pessimistic_ms(k)) is not None}

    def pessimistic_ms(self, key: str) -> float | None:
        rng = self.latency_range_ms.get(key)
        return rng.high if rng is not None and self.source == "estimated" else self.latency_ms.get(key)

    @property
    def sized_to_limit(self) -> bool:
        """Sized from a model config (no run behind it): its concurrency was searched up to the SLOs, so its margin
        is near zero by construction and says nothing about the option."""
        return self.source == "estimated" and self.run_id is None

    @property
    def min_margin_frac(self) -> float | None:
        fr = [m / lim for k, m in self.slo_margin_ms.items() if (lim := self.slos[k])]
        return min(fr) if fr else None

    @property
    def headline_ok(self) -> bool:
        """Evidence that can carry a recommendation; an estimate also only where the engine was run on that stack."""
        return self.evidence in HEADLINE_EVIDENCE and self.tested_there

    def to_dict(self) -> dict[str, Any]:
        return {**FileForm.to_dict(self), "slo_margin_ms": self.slo_margin_ms}


@dataclass(frozen=True)
class MeasuredRun:
    run: RunResult
    hardware: Hardware | None  # None: could not map the machine to the catalog (or a server's was not declared)
    notes: tuple[str, ...] = field(default=())
    devices: int = 1  # per replica: the GPUs of the run's machine (or the declared server's)
    served: bool = False  # an engine behind an HTTP endpoint: the hardware is the server's
    here: bool = False  # made on this machine (its fingerprint matches: `machines.py`)


def engine_of(run: RunResult) -> str:
    return str(run.engine.adapter or run.engine.engine)


def config_of(engine: EngineInfo) -> str:
    parts = [engine.precision, engine.format, engine.batching]
    if engine.threads:
        parts.append(f"{engine.threads} threads")
    return " / ".join(str(p) for p in parts if p) or "default"


def _scenario(run: RunResult) -> str:
    return run.scenario_name or ""


def measured_candidates(runs: list[MeasuredRun], c: Constraints,
                        samples: Mapping[str, RunSample] | None = None) -> list[Candidate]:
    """One candidate per (engine, model, config, hardware), from its best SLO-meeting VALID option."""
    groups: dict[tuple[str, str, str, str, int], list[MeasuredRun]] = defaultdict(list)
    for mr in runs:
        e = mr.run.engine
        hw_id = mr.hardware.id if mr.hardware else UNKNOWN_SERVER if mr.served else UNLISTED_CPU
        groups[(engine_of(mr.run), str(e.model), config_of(e), hw_id, mr.devices)].append(mr)
    out = []
    for (engine, model, config, hw_id, devices), members in groups.items():
        slos = c.slos_for(members[0].run.slos)
        scen = _scenario(members[0].run)
        opts = options([mr.run for mr in members], slos, c.percentile, samples)
        best, closest = best_and_closest(opts)
        opt = best or closest
        run = opt.runs[0]
        n_in, n_out = tokens_per_request(run.summary)
        shape = ModelShape.from_engine(run.engine)
        runs_txt = f"{opt.n} repeats" if opt.n > 1 else f"run {opt.run_id}"
        notes = [f"measured: {runs_txt} ({opt.status})"]
        above = _failed_above(best, opts)
        if best is None:
            notes.append(f"no VALID run established every SLO; closest is {opt.rate.text()} req/s")
        elif above is None:
            notes.append(f"capacity = highest measured rate meeting the SLOs ({opt.rate.text()} req/s); no higher "
                         "rate was measured, so it is a lower bound: a sweep to higher rates may find more")
        else:
            load = f"{above:.0f} users" if _users(best) is not None else f"offered {above:.3g} req/s"
            notes.append(f"capacity = highest measured rate meeting the SLOs ({opt.rate.text()} req/s); "
                         f"{load} did not meet them")
        far = best is not None and far_inside(opt, slos)
        ratio = above / best.rate.value if best is not None and above is not None and best.rate.value > 0 else None
        loose = (best is not None and ratio is not None and _users(best) is None
                 and ratio > (FAR_INSIDE_BRACKET if far else LOOSE_BRACKET))
        if loose and ratio is not None:
            why = (f"over {LOOSE_BRACKET:g}x" if ratio > LOOSE_BRACKET else
                   f"and every latency under {FAR_INSIDE:.0%} of its limit at {opt.rate.value:.3g} req/s")
            notes.append(f"a loose bracket: met at {opt.rate.value:.3g} req/s, failed at {above:.3g} "
                         f"({ratio:.1f}x apart, {why}): the limit lies between, unmeasured, so the capacity is a "
                         "lower bound")
        if opt.valid:
            evidence: Evidence = "measured"
            note = f"measured: {runs_txt}, VALID"
        else:
            evidence, note = "invalid", f"measured only in runs that are not VALID ({opt.status})"
        hw = members[0].hardware
        notes += [n for mr in members for n in mr.notes if n not in notes]
        bound = classify(run, hw)
        if bound.bound == "host-bound" or (bound.bound == "unclear" and hw is not None and hw.kind == "gpu"):
            notes.append(bound.reason)
        problem = ""
        if hw is None and members[0].served:
            problem = (f"served from {UNKNOWN_SERVER}: the run measured a server whose hardware was not declared, "
                       "so it sizes and prices nothing")
        out.append(Candidate(
            engine=engine, hardware_id=hw_id, config=config, model=model, source="measured", run_id=opt.run_id,
            devices=devices, capacity_rps=opt.rate.value if best else None,
            latency_ms={k: (iv.value if iv else None) for k, iv in opt.latency.items()}, slos=slos,
            input_tokens_per_request=n_in, output_tokens_per_request=n_out,
            precision=str(run.engine.precision or ""), assumptions=tuple(notes),
            n_params=shape.n_params if shape else None, evidence=evidence, evidence_note=note,
            capacity_range=opt.rate if best else None,
            latency_range_ms={k: iv for k, iv in opt.latency.items() if iv is not None},
            slo_checks=tuple(ch.to_dict() for ch in opt.checks.values()), repeats=opt.n,
            group_id=opt.group_id, scenario=scen, device_class=hw.kind if hw else "", hardware_problem=problem,
            bound=bound.bound, run_durations_s=tuple(float(r.summary.window_s) for r in opt.runs if r.summary.window_s),
            capacity_is_lower_bound=best is not None and (above is None or loose),
            capacity_failed_rps=above if loose else None,
            evidence_class=_measured_class(members)))
    return out


def _measured_class(members: list[MeasuredRun]) -> EvidenceClass:
    """Served: the server hardware the user declared; else here when every run was made on this machine, else the
    hardware the runs' manifests recorded where they were made."""
    if members[0].served:
        return "measured on declared hardware"
    return "measured here" if all(m.here for m in members) else "measured on recorded hardware"


def far_inside(o: MeasuredOption, slos: Mapping[str, float | None]) -> bool:
    """Every set latency limit met with its percentile under FAR_INSIDE of the limit: the step says little about
    where the limit is."""
    pairs = [(iv.value, lim) for k, lim in slos.items() if lim and (iv := o.latency.get(k)) is not None]
    return bool(pairs) and all(v <= FAR_INSIDE * lim for v, lim in pairs)


def _offered(o: MeasuredOption) -> float:
    """The highest rate an option was asked for or reached (a closed-loop run has no offered rate)."""
    return max(o.rate.value, *(offered_rps(r) or 0.0 for r in o.runs))


def _users(o: MeasuredOption) -> int | None:
    """The closed-loop users an option ran with (None: not every run was a closed loop)."""
    users = [r.schedule.concurrency for r in o.runs]
    return max(users) if users and all(u for u in users) else None  # type: ignore[type-var]


LOOSE_BRACKET = 1.5  # a failing rate this far above the passing one leaves the capacity a lower bound (docs/recommend.md)
FAR_INSIDE = 0.25  # a passing step whose latencies are all under this share of their limits is far inside its SLOs,
FAR_INSIDE_BRACKET = 1.1  # and then a failing rate this far above it already leaves the capacity a lower bound


def _failed_above(best: MeasuredOption | None, opts: list[MeasuredOption]) -> float | None:
    """The lowest load above `best`'s that was measured and did not meet the SLOs (None: the limit was not found).
    Closed loops are compared by users: past saturation more users bring no more requests per second, so a
    failing step with more users can have a lower rate than the best one."""
    if best is None:
        return None
    if (users := _users(best)) is not None:
        return min((float(u) for o in opts if not o.meets and (u := _users(o)) is not None and u > users),
                   default=None)
    return min((_offered(o) for o in opts if not o.meets and _offered(o) > best.rate.value), default=None)
