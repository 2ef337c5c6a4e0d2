"""The measurement that would settle an option the evidence keeps out of the headline.

An estimate that passes on paper but cannot headline (uncalibrated, no backtest, untested on that
hardware's stack) and would be cheaper than the recommendation, or stands where there is none,
gets one line: the exact `advisor bench` to run on that hardware, whose run then makes it measured. The
command carries the workload flags of the run the estimate was made from (`evidence.workload_flags`), so
the new run measures the same workload and is sized with it rather than left out as another one.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import PurePath

from advisor.catalog import Catalog
from advisor.recommend.evidence import workload_flags
from advisor.recommend.ranking import Row
from advisor.saved.store import RunResult

MAX_LINES = 3


def _cheaper(r: Row, best: Row | None) -> bool:
    if best is None or best.monthly_usd is None:
        return True
    return r.monthly_usd is not None and r.monthly_usd < best.monthly_usd


def _engine_flags(engine: str, hardware_id: str, device: str) -> str:
    """The engine flags of the bench that measures `engine`; SGLang is measured through its OpenAI endpoint."""
    if engine == "sglang":
        return f"--engine openai --url http://SGLANG_HOST:30000 --server-hardware {hardware_id}"
    return f"--engine {engine} --device {device}"


def settle(rows: tuple[Row, ...] | list[Row], best: Row | None, catalog: Catalog,
           runs: Sequence[RunResult] = ()) -> tuple[str, ...]:
    """One line per cheaper estimate kept out of the headline by its evidence: what it rests on and what to run.

    `runs` holds the runs the estimates were made from; where an estimate's run is not among them, the line
    says to add that run's workload flags instead of printing a command that would measure another workload."""
    by_id = {r.run_id: r for r in runs}
    out = []
    for r in rows:
        c = r.candidate
        if c.source != "estimated" or not r.passes or r.headline_ok or not _cheaper(r, best):
            continue
        hw = catalog.hardware.get(c.hardware_id)
        device = "cpu" if hw is None or hw.kind == "cpu" else "cuda"
        model = PurePath(c.model).name or c.model
        scen = f" --scenario {c.scenario}" if c.scenario else ""
        money = f"${r.monthly_usd:,.0f}/month" if r.monthly_usd is not None else "cost unknown"
        base = by_id.get(c.run_id or "")
        flags = "".join(f" {f}" for f in workload_flags(base)) if base is not None else ""
        same = "" if base is not None or c.run_id is None else \
            f" with the workload flags of run {c.run_id} (its schedule.overrides)"
        if c.run_id is None and c.scenario:  # sized from a model config at the scenario's full-scale lengths
            flags = " --full-scale"
        out.append(f"{c.engine} @ {c.hardware_id} would cost {money} on paper, but {c.evidence_note}"
                   + ("" if c.tested_there else "; untested there")
                   + f": to settle it, run `advisor bench {_engine_flags(c.engine, c.hardware_id, device)} --model "
                   f"{shlex.quote(model)}{scen}{flags}`{same} on {hw.name if hw else c.hardware_id} and pass that run "
                   "with --runs")
        if len(out) >= MAX_LINES:
            break
    return tuple(out)
