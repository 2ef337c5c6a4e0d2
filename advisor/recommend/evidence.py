"""When the data cannot carry a recommendation: say so first, and give the commands that would fix it.

A headline needs a row that passes every constraint on evidence that can carry it (`Row.headline_ok`:
VALID measured runs with their SLOs established, or estimates calibrated on VALID runs of the same
device class). When no such row exists but the reason is the evidence (runs that are not VALID, SLOs
not established, estimates carried across device classes) rather than the constraints, the answer is
"no trustworthy recommendation yet", with one exact command per measured cell that lacks evidence:
which sweep (or closed-loop bench), how long, and how many requests the SLO percentile needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.metrics.support import requests_needed
from advisor.recommend.machines import is_served
from advisor.recommend.ranking import Row
from advisor.run.rates import load_rps
from advisor.saved.store import RunResult
from fileform import FileForm

MIN_VALID_REQUESTS = 100  # the verdict's min_n_p95 (advisor.metrics.verdict)
SAFETY = 1.2  # room for a few requests over the limit, which raise the early-stopping bar
HEADLINE = "no trustworthy recommendation yet"


@dataclass(frozen=True)
class EvidenceGap(FileForm):
    reason: str  # one sentence, starting with HEADLINE
    commands: tuple[str, ...]  # exact commands, each followed by "  # what it buys"
    notes: tuple[str, ...] = ()


def requests_for(percentile: float) -> int:
    """Requests per run (or sweep step) for a VALID verdict and an established p-th percentile limit."""
    return math.ceil(max(MIN_VALID_REQUESTS, requests_needed(0, percentile)) * SAFETY)


def _is_evidence(f: Any) -> bool:
    return f.constraint == "evidence" or (f.constraint == "slo" and "not established" in f.detail)


def _evidence_problem(r: Row) -> bool:
    """Only the evidence stands between this row and a recommendation (better data could make it one)."""
    if r.passes:
        return not r.headline_ok
    return all(_is_evidence(f) for f in r.failures)


def _nice(x: float) -> str:
    return f"{float(f'{x:.2g}'):g}"


def workload_flags(run: RunResult) -> list[str]:
    """The flags that make a new run draw the workload `run` drew (the same key in `workloads.settings`).

    Every setting the run was given that shapes its requests: `--full-scale` (without it the scenario's `fit`
    block applies again: shorter lengths, capped outputs, another rate, so another workload), the length
    settings and the seed. Rate, duration, warm-up and users are the new command's own."""
    ov, flags = run.schedule.overrides, []
    if ov.full_scale:
        flags.append("--full-scale")
    seed = ov.seed if ov.seed is not None else run.schedule.seed or None  # a seed not given on the command line is 0
    if seed is not None:
        flags.append(f"--seed {seed}")
    for key, flag in (("length_scale", "--length-scale"), ("max_input_tokens", "--max-input-tokens"),
                      ("max_output_tokens", "--max-output-tokens")):
        if (v := getattr(ov, key)) is not None:
            flags.append(f"{flag} {v:g}" if isinstance(v, float) else f"{flag} {v}")
    return flags


def _common_flags(run: RunResult, sweep: bool) -> list[str]:
    e = run.engine
    flags = [f"--scenario {run.scenario_name}", f"--engine {e.adapter or e.engine}"]
    if e.model and e.model != "none":
        flags.append(f"--model {e.model}")
    flags += workload_flags(run)
    if e.threads:
        flags.append(f"--opt threads={e.threads}" if sweep else f"--threads {e.threads}")
    if is_served(run) and e.device:  # the server's URL (credentials already stripped)
        flags.append(f"--opt url={e.device}" if sweep else f"--url {e.device}")
    return flags


def cell_command(run: RunResult, percentile: float, slo_failed: bool) -> str:
    """The command that measures this run's cell with enough requests, and what it buys."""
    n = requests_for(percentile)
    why = (f"  # >= {n} requests per run: VALID needs {MIN_VALID_REQUESTS}, a p{percentile:g} limit needs "
           f"{requests_needed(0, percentile)} with none over it (MLPerf early stopping, 99%)")
    status = run.verdict.status
    warmup = run.schedule.warmup_s
    warm = f" --warmup {warmup:g}" if warmup else ""
    rate = load_rps(run)
    if run.schedule.mode == "open" and rate:
        lower = status == "SATURATED" or slo_failed
        rates = [rate / 4, rate / 2, rate] if lower else [rate / 2, rate, rate * 2, rate * 4]
        duration = math.ceil(n / min(rates))
        return (f"advisor sweep {' '.join(_common_flags(run, True))} --rates {','.join(_nice(r) for r in rates)} "
                f"--duration {duration}{warm}" + why)
    achieved = float(run.summary.requests_per_s or 0.0)
    conc = run.schedule.concurrency
    duration = math.ceil(n / achieved) if achieved > 0 else 10 * math.ceil(float(run.schedule.duration_s or 60))
    c = f" --concurrency {conc}" if conc else ""
    return f"advisor bench {' '.join(_common_flags(run, False))}{c} --duration {duration}{warm}" + why


def _cell(run: RunResult) -> tuple[str, ...]:
    e, ov = run.engine, run.schedule.overrides
    keep = {k: v for k, v in ov.as_dict().items() if k not in ("rate_rps", "duration_s", "warmup_s")}
    return (str(run.scenario_name), str(e.adapter), str(e.model), str(e.threads), repr(sorted(keep.items())))


def evidence_gap(runs: Sequence[RunResult], rows: Sequence[Row], percentile: float) -> EvidenceGap | None:
    """None when some row can carry the headline, or when nothing passes for reasons other than evidence."""
    if any(r.passes and r.headline_ok for r in rows) or not any(_evidence_problem(r) for r in rows):
        return None
    valid = [r for r in runs if r.verdict.status == "VALID"]
    untrusted = [r for r in rows if r.passes and not r.headline_ok]
    if runs and not valid:
        first = next((str(x) for r in runs for x in r.verdict.reasons), "")
        reason = (f"{HEADLINE}: none of the {len(runs)} runs is VALID"
                  + (f" (e.g. {first.rstrip('.')})" if first else "") + "; every option would rest on them")
    elif untrusted:
        why = sorted({r.candidate.evidence_note for r in untrusted})
        reason = f"{HEADLINE}: the options that pass rest on evidence that cannot carry a decision ({'; '.join(why)})"
    else:
        reason = f"{HEADLINE}: the measured runs do not establish the SLO percentiles"
    established = {_cell(r) for r in valid}
    failed_slo = {row.candidate.run_id for row in rows if row.candidate.source == "measured"
                  and any(f.constraint == "slo" and "not established" not in f.detail for f in row.failures)}
    lacking = {row.candidate.run_id for row in rows if row.candidate.source == "measured" and _evidence_problem(row)}
    cells: dict[tuple[str, ...], list[RunResult]] = {}
    for run in runs:
        cells.setdefault(_cell(run), []).append(run)
    commands: list[str] = []
    for cell, members in cells.items():
        if cell in established and not any(r.run_id in lacking for r in members):
            continue
        rep = max(members, key=lambda r: r.summary.n_ok)  # the most informative
        commands.append(cell_command(rep, percentile, any(r.run_id in failed_slo for r in members)))
    notes = []
    if any(r.candidate.evidence == "uncalibrated" for r in untrusted):
        notes.append("estimates calibrated on another device class (e.g. GPUs from CPU runs) or on a single run stay "
                     "out of the headline: run the same sweep on that hardware to calibrate them, or pass "
                     "--allow-uncalibrated to rank them anyway")
    notes.append("repeat each cell (3 or more runs) to get intervals: a single run says nothing about run-to-run "
                 "noise")
    return EvidenceGap(reason, tuple(dict.fromkeys(commands)), tuple(notes))
