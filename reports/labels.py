"""Names and labels for saved runs, and the one escaping rule for text that goes into charts.

Every string that came from a user or a server (scenario, model and engine names,
error messages) is untrusted. HTML pages escape it with jinja2's autoescape;
plotly draws chart text from its own small HTML subset, so chart text goes through
`chart_text`, which escapes it and lets plotly decode the entities back to the same
characters: `<script>` shows as the text "<script>" and never runs.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from advisor.metrics.distribution import Distribution
from advisor.run.rates import load_rps
from advisor.saved.store import RunResult

VALID = "VALID"


def chart_text(value: Any) -> str:
    """Untrusted text made safe for plotly titles, legends, hover text and tick labels."""
    return html.escape("" if value is None else str(value), quote=True)


def scenario_name(run: RunResult) -> str:
    return run.scenario_name or "?"


def engine_name(run: RunResult) -> str:
    return str(run.engine.engine or run.engine.adapter or "?")


def model_name(run: RunResult) -> str:
    return str(run.engine.model or "?")


def status(run: RunResult) -> str:
    return run.verdict.status


def is_valid(run: RunResult) -> bool:
    return status(run) == VALID


def lag_ms(run: RunResult) -> Distribution:
    """Send lag: the load generator's own copy, else the summary's client queue (the same distribution)."""
    return run.loadgen.lag_ms or run.summary.client_queue_ms


def load_text(run: RunResult) -> str:
    rps = load_rps(run)
    conc = run.schedule.concurrency
    if run.schedule.mode == "closed" and conc:
        return f"{conc} users"
    return "?" if rps is None else f"{rps:.3g} req/s"


def run_label(run: RunResult) -> str:
    """Plain (unescaped) one-line label: engine · model · scenario @ load, flagged when not VALID."""
    label = f"{engine_name(run)} · {model_name(run)} · {scenario_name(run)} @ {load_text(run)}"
    return label if is_valid(run) else f"{label} [{status(run)}]"


def run_labels(runs: Sequence[RunResult]) -> dict[str, str]:
    """Unique plain labels by run id (the run id's tail is appended where two labels collide)."""
    base = {r.run_id: run_label(r) for r in runs}
    counts: dict[str, int] = {}
    for label in base.values():
        counts[label] = counts.get(label, 0) + 1
    return {rid: (label if counts[label] == 1 else f"{label} ({rid[-4:]})") for rid, label in base.items()}


def group_key(run: RunResult) -> tuple[str, str, str]:
    """Runs of one engine, model and scenario at different loads form one load curve."""
    return engine_name(run), model_name(run), scenario_name(run)
