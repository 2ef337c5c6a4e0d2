"""`recommend()`: saved runs + constraints -> a ranked, explained Recommendation.

Runs are plain result.json dicts (advisor.run/1). Each run's machine is mapped to the
catalog from its manifest (or to this machine's detected entry when it ran here), then
measured and estimated candidates are priced, checked, ranked, and summarised with a
Pareto frontier, hosted-API break-even and a roofline backtest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from advisor.catalog import Catalog
from advisor.catalog.cost import BLEND_INPUT_PER_OUTPUT, HOURS_PER_MONTH, OUTPUT_TOKEN_WEIGHT
from advisor.hardware.detect import Detected
from advisor.metrics.slo_evidence import RunSample
from advisor.recommend.candidates import (
    UNLISTED_CPU,
    Candidate,
    engine_of,
    measured_candidates,
)
from advisor.recommend.constraints import Constraints
from advisor.recommend.error_bars import EstimatorBacktest, estimator_backtest
from advisor.recommend.estimates import estimated_candidates
from advisor.recommend.evidence import EvidenceGap, evidence_gap, workload_flags
from advisor.recommend.explain import Advice, advise
from advisor.recommend.hosted import BreakEven, break_evens
from advisor.recommend.machines import resolve_runs
from advisor.recommend.model_config import ModelConfigAsk, sized_candidates
from advisor.recommend.no_row import NoRow, no_row_lines
from advisor.recommend.order import rank
from advisor.recommend.pareto import Frontier, pareto
from advisor.recommend.ranking import Row, evaluate
from advisor.recommend.rests_on import headline_warnings, rests_on
from advisor.recommend.run_selection import LeftOut, is_test_engine, select_runs
from advisor.recommend.settle import settle
from advisor.saved.store import RunResult


class NoRunsError(ValueError):
    """No saved run matches; the message says where it looked and how to make one."""


class UnknownScenarioError(ValueError):
    """Runs were saved but none is of the scenario asked for: a usage error that lists the scenarios they are of."""


class MixedScenariosError(ValueError):
    """The runs are of several scenarios: a recommendation is for one traffic; the message says how to pick."""


@dataclass(frozen=True)
class Recommendation:
    constraints: Constraints
    design_rps: float | None
    load_basis: str
    rows: tuple[Row, ...]
    frontiers: tuple[Frontier, ...]
    break_even: tuple[BreakEven, ...]
    backtest: EstimatorBacktest  # the same computation the estimates' error bars come from
    advice: Advice | None  # set when no row passes on evidence that can carry a recommendation
    notes: tuple[str, ...] = field(default=())
    evidence: EvidenceGap | None = None  # set when the data cannot carry a recommendation yet
    warnings: tuple[str, ...] = ()  # what makes a "passes" weaker than it reads (shown with the headline)
    to_settle: tuple[str, ...] = ()  # cheaper options the evidence keeps out of the headline, and what to measure
    rests_on: str = ""  # the headline's engine, model and weights, precision, hardware and evidence (rests_on.py)
    runs_used: tuple[str, ...] = ()  # the run ids ranked (run_selection.py: the report shows the same)
    left_out: tuple[LeftOut, ...] = ()  # every other run given, with why

    @property
    def best(self) -> Row | None:
        """The first row that passes on evidence that can carry a decision (None: no recommendation)."""
        return next((r for r in self.rows if r.passes and r.headline_ok), None)

    @property
    def runners_up(self) -> tuple[Row, ...]:
        """The next two rows after the best that pass on such evidence."""
        best = self.best
        return tuple(r for r in self.rows if r.passes and r.headline_ok and r is not best)[:2]

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"schema": "advisor.recommendation/1", "constraints": self.constraints.model_dump(mode="json"),
                "design_rps": self.design_rps, "load_basis": self.load_basis,
                "best": self.best.key if self.best else None,
                "runners_up": [r.key for r in self.runners_up], "rows": [r.to_dict() for r in self.rows],
                "pareto": [f.to_dict() for f in self.frontiers], "break_even": [b.to_dict() for b in self.break_even],
                "backtest": self.backtest.to_dict(), "advice": self.advice.to_dict() if self.advice else None,
                "evidence": self.evidence.to_dict() if self.evidence else None, "notes": list(self.notes),
                "warnings": list(self.warnings), "to_settle": list(self.to_settle), "rests_on": self.rests_on,
                "evidence_class": self.best.candidate.evidence_class if self.best else None,
                "runs_used": list(self.runs_used), "left_out": [x.to_dict() for x in self.left_out]}


def quality_from_runs(runs: list[RunResult]) -> dict[str, float]:
    """Drift per "engine/precision" from runs that carry a verify result: `quality: {token_agreement: x}`."""
    out: dict[str, float] = {}
    for r in runs:
        q, e = r.quality or {}, r.engine
        agreement = (q.get("top1_agreement") if q.get("top1_agreement") is not None else q.get("token_agreement")) \
            if isinstance(q, dict) else None  # verify's teacher-forced figure first, greedy agreement else
        if agreement is not None:
            out.setdefault(f"{e.adapter or e.engine}/{e.precision or ''}", 1.0 - float(agreement))
    return out


def no_slo_warning(cands: list[Candidate]) -> str | None:
    """Said when some option has no latency limit at all: it then "meets every constraint" on load and budget only.

    A roofline estimate with no limit sits at its throughput ceiling, where queueing makes latency grow
    without bound, so its capacity (and the replicas sized on it) is no latency promise.
    """
    free = [c for c in cands if all(v is None for v in c.slos.values())]
    if not free:
        return None
    scenarios = sorted({c.scenario for c in free if c.scenario})
    where = f"scenario {', '.join(repr(s) for s in scenarios)} sets" if scenarios else "the runs' scenarios set"
    tpot = [c.latency_ms.get("tpot_ms") for c in free if c.source == "estimated"]
    worst = max((v for v in tpot if v is not None and v != float("inf")), default=None)
    at = (f"; estimated options are sized at their throughput ceiling, where latency is unbounded "
          f"(p95 TPOT up to {worst:,.0f} ms here)") if worst is not None else ""
    return (f"no latency SLO: {where} none and no limit was given (--p95-ttft-ms / --p95-tpot-ms / --p95-e2e-ms, "
            f"or ttft_ms / tpot_ms in --constraints), so 'meets every constraint' means load and budget only{at}; "
            "set a TTFT or TPOT limit to size for latency")


ESTIMATES_ROOFLINE = ("estimated rows extrapolate measured runs with a roofline model; each estimate is a range from "
                      "the estimator's backtest for that engine and device class (printed below; the stated default "
                      "x/÷2 where there is none, and then the estimate is not 'calibrated'), and passes an SLO or the "
                      "budget only at the pessimistic end of its range")
ESTIMATES_SIZED = ("estimated rows are sized from the model config with operator tables (aiconfigurator's, measured on "
                   "each GPU, or the nearest GPU's scaled by peaks); each is a range from the sizing backtest (advisor "
                   "estimate --backtest), passes an SLO or the budget only at the pessimistic end of its range, and "
                   "its replicas are sized at the low end of its capacity; measured rows of the same model come first")
MAX_REPLICAS_UNWARNED = 8  # a fleet larger than this rests on one replica's capacity: warned (docs/recommend.md)


def narrowing_sweep(c: Candidate, run: RunResult | None) -> str:
    """The sweep that finds the limit between a passing rate and the next failing one: three rates between them,
    evenly spaced in ratio, with the measured run's workload flags so it measures the same workload."""
    lo, hi = c.capacity_rps or 0.0, c.capacity_failed_rps or 0.0
    rates = ",".join(f"{lo * (hi / lo) ** (i / 4):.3g}" for i in (1, 2, 3))
    flags = "".join(f" {f}" for f in workload_flags(run)) if run is not None else ""
    return f"advisor sweep --scenario {c.scenario} --engine {c.engine} --rates {rates}{flags}"


def capacity_warnings(best: Row, runs: Sequence[RunResult] = ()) -> tuple[str, ...]:
    """What the headline's capacity per replica does not show: a large fleet sized from one replica, a lower bound."""
    c, out = best.candidate, []
    cap = f"{c.capacity_rps:.3g} req/s" if c.capacity_rps else "unknown"
    if best.replicas is not None and best.replicas > MAX_REPLICAS_UNWARNED:
        if c.source == "measured":
            secs = ", ".join(f"{d:.0f}" for d in c.run_durations_s) or "unknown"
            basis = f"comes from {c.repeats} run(s) of {secs} s on one replica"
        else:
            basis = (f"is a roofline estimate from run {c.run_id} on other hardware" if c.run_id is not None
                     else "is a sizing estimate from operator tables")
        out.append(f"the headline needs {best.replicas} replicas (more than {MAX_REPLICAS_UNWARNED}): its capacity per "
                   f"replica ({cap}) {basis}; how load spreads over {best.replicas} replicas (load balancing, "
                   "per-replica burstiness) was not measured")
    if c.capacity_is_lower_bound and c.capacity_failed_rps:
        run = next((r for r in runs if r.run_id == c.run_id), None)
        out.append(f"the headline's capacity per replica ({cap}) is a lower bound: it met the SLOs at {cap} and "
                   f"failed at {c.capacity_failed_rps:.3g} req/s ({c.capacity_failed_rps / (c.capacity_rps or 1):.1f}x "
                   f"apart), so the replicas are sized with {cap} and may be more than needed; "
                   f"`{narrowing_sweep(c, run)}` would narrow it")
    elif c.capacity_is_lower_bound:
        out.append(f"the headline's capacity per replica ({cap}) is a lower bound: no higher rate was measured, so "
                   "the replicas and cost may be more than needed; a sweep to higher rates would find the limit")
    return tuple(out)


def recommend(runs: list[RunResult], constraints: Constraints, catalog: Catalog,
              detected: Detected | None = None, quality: dict[str, float] | None = None,
              samples: dict[str, RunSample] | None = None, model: ModelConfigAsk | None = None) -> Recommendation:
    """Rank every measured and estimated deployment of `runs` against `constraints`.

    `samples` (by run id, `advisor.metrics.slo_evidence.load_samples`) makes the SLO checks exact; without them
    the count of requests over a limit is bounded from the summary's percentiles. With `model` (a model config,
    `--model-config`), the measured rows are the runs of that model's shape and the estimated rows are sized
    from the operator tables (`model_config.py`) instead of extrapolated from runs; no run is needed.
    """
    every = list(runs)  # all scenarios: the estimator's backtest and calibration may use any of them
    if model is not None:
        if constraints.scenario not in (None, model.scenario.name):
            raise ValueError(f"--model-config sizes scenario {model.scenario.name!r}, the constraints name "
                             f"{constraints.scenario!r}: give one")
        constraints = constraints.model_copy(update={"scenario": model.scenario.name})
    chosen = select_runs(runs, constraints.scenario, model.arch if model is not None else None)
    runs = list(chosen.included)
    if constraints.scenario and not runs and chosen.held_scenarios and model is None:
        # --scenario filters saved runs: the names they carry are the choices
        raise UnknownScenarioError(f"no saved runs for scenario {constraints.scenario!r}; the saved runs are of "
                                   f"{', '.join(chosen.held_scenarios)} (--scenario picks saved runs by their "
                                   "scenario's name)")
    if not runs and model is None:
        raise NoRunsError(f"no saved runs{' for scenario ' + repr(constraints.scenario) if constraints.scenario else ''}; "
                          "run `advisor bench` (or `advisor sweep`) first, or point --runs at the folder that holds them")
    if len(chosen.scenarios) > 1:  # a capacity measured on one traffic would size replicas for another
        raise MixedScenariosError(f"the runs are of {len(chosen.scenarios)} scenarios ({', '.join(chosen.scenarios)}); a "
                                  "recommendation is for one traffic: pick one (`advisor recommend --scenario NAME`, "
                                  "or `scenario: NAME` in the constraints file)")
    workload_note = chosen.workload_notes[0] if chosen.workload_notes else None
    if detected is not None and detected.catalog_id == "custom":
        catalog = catalog.with_hardware(detected.hardware)
    if constraints.hardware:
        unknown = [h for h in constraints.hardware if h not in catalog.hardware]
        if unknown:
            raise ValueError(f"unknown hardware {', '.join(unknown)}; known: {', '.join(sorted(catalog.hardware))}")
    in_scope = {r.run_id for r in runs}
    resolved_all = resolve_runs([r for r in every if not is_test_engine(r.engine.adapter)], catalog, detected)
    resolved = [mr for mr in resolved_all if mr.run.run_id in in_scope] or resolve_runs(runs, catalog, detected)
    sized_notes: list[str] = []
    for hw in {mr.hardware.id: mr.hardware for mr in resolved if mr.hardware is not None and mr.hardware.unlisted}.values():
        catalog = catalog.with_hardware(hw)
    bt = estimator_backtest(resolved_all, engine_of)
    quality = {**quality_from_runs(runs), **(quality or {})}  # a --quality file wins

    def evaluated(cons: Constraints, no_row: list[NoRow] | None = None) -> tuple[list[Row], float | None, str]:
        """Every candidate priced and checked under `cons` (unranked), the load sized for, and its basis."""
        cands = measured_candidates(resolved, cons, samples)
        if cons.include_estimates and model is not None:  # sized from tables, not extrapolated from runs
            cands += sized_candidates(model, cons, catalog, resolved, no_row, sized_notes if no_row is not None else None)
        elif cons.include_estimates:
            cands += estimated_candidates(resolved, cons, catalog, bt, resolved_all, no_row)
        tokens = [c.input_tokens_per_request + c.output_tokens_per_request for c in cands
                  if c.source == "measured" or model is not None]
        rps, basis = cons.design_rps(max(tokens) if tokens else None)
        return [evaluate(c, cons, catalog, rps, quality) for c in cands], rps, basis

    no_row: list[NoRow] = []
    unranked, design_rps, basis = evaluated(constraints, no_row)
    cands = [r.candidate for r in unranked]
    by_monthly = design_rps is not None
    rows = rank(unranked, by_monthly, constraints.tie_break, measured_first=model is not None)
    notes = [f"load: {basis}; replicas = ceil(load x (1 + {constraints.headroom:g} headroom) / capacity per replica)",
             f"monthly cost = $/device-hour x devices x replicas x {HOURS_PER_MONTH:g} h (always on)",
             f"price tier: {constraints.tier} (a --price / --prices override wins)",
             f"$/1M at the SLO operating point (capacity); blended = {BLEND_INPUT_PER_OUTPUT:g}:1 input:output with an "
             f"output token weighted {OUTPUT_TOKEN_WEIGHT:g}x",
             ESTIMATES_SIZED if model is not None else ESTIMATES_ROOFLINE,
             "an SLO is met only when the run's requests establish it (MLPerf early stopping, 99%); options whose "
             f"cost ranges overlap are a tie, broken by {', then '.join(constraints.tie_break) or 'cost'}"]
    notes += [n for n in (chosen.model_note, *sized_notes) if n]
    if chosen.test_note:
        notes.append(chosen.test_note)
    if workload_note:
        notes += [workload_note, *chosen.lines("workload")]
    if constraints.max_quality_drift is not None and not quality:
        notes.append("quality drift unknown for every engine (no verify results given): not checked")
    unmapped = sorted({str((mr.run.manifest or {}).get('hardware', {}).get('cpu_model')) for mr in resolved
                       if mr.hardware is None and not mr.served})
    if unmapped:
        notes.append(f"CPU machines not in the catalog and not this one ({', '.join(unmapped)}): reported as "
                     f"{UNLISTED_CPU!r}, priced only when added under `hardware:` in a --prices file")
    notes += list(dict.fromkeys(n for mr in resolved for n in mr.notes))
    allowed = constraints.hardware or tuple(h.id for h in catalog.hardware.values() if not h.unlisted and not h.measured)
    notes += no_row_lines(no_row, allowed, {r.candidate.hardware_id for r in rows}, constraints.include_estimates)
    gap = evidence_gap(runs, rows, constraints.percentile)
    warning = no_slo_warning(cands)
    advice = advise(rows, constraints, lambda cons: evaluated(cons)[0])
    rec = Recommendation(constraints, design_rps, basis, tuple(rows), tuple(pareto(rows, by_monthly)),
                         tuple(break_evens(rows, catalog.hosted)), bt, advice, tuple(notes), gap,
                         tuple(w for w in (workload_note, warning) if w),
                         runs_used=chosen.included_ids, left_out=chosen.left_out)
    if rec.evidence is None and rec.best is not None:
        rec = replace(rec, warnings=rec.warnings + headline_warnings(rec.best) + capacity_warnings(rec.best, runs),
                      rests_on=rests_on(rec.best, runs))
    return replace(rec, to_settle=settle(rec.rows, rec.best, catalog, runs))
