"""Embedding, rerank and RAG pipeline runs ranked like generation runs, each by its own unit, with evidence.

Reads the saved `runs-embed/<run-id>/result.json` of `advisor embed` (task embed or rerank) and `advisor
rag` (task rag). Runs are compared within one scenario only (another scenario is another workload). A run
is an option when its verdict is VALID; the others are listed as excluded with their verdict and its first
reason. Options that meet the scenario's SLO come first (then those whose SLO could not be judged, then
those that miss it), and within each group:

- embed: $ per 1M tokens embedded, lowest first, when every option is priced; else inputs/s, highest first;
- rerank: $ per 1M passages reranked, lowest first, when every option is priced; else passages/s, highest first;
- rag: $ per answer within the SLO (the machine's price over goodput), lowest first, when every option is
  priced; else goodput (answers/s within the SLO), highest first.

Equal figures are ordered by the p95 latency (rag: time to first answer token), lowest first. A price
comes from the run (`--price-usd-per-hour` when it was measured); runs without one are ranked by
throughput, and the unit used is stated with the ranking. The throughput and the cost are at the rate
the run offered (open loop): a run below its engine's capacity answers at the offered rate, so runs are
compared fairly at the same rate, and a higher rate that stays VALID and within the SLO shows more of
the capacity.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TASKS = ("embed", "rerank", "rag")
# per task: (the cost key and its unit, the throughput key and its unit)
UNITS = {"embed": (("usd_per_million_tokens", "$ per 1M tokens embedded"), ("inputs_per_s", "inputs/s")),
         "rerank": (("usd_per_million_inputs", "$ per 1M passages reranked"), ("inputs_per_s", "passages/s")),
         "rag": (("usd_per_good_answer", "$ per answer within the SLO"), ("goodput_rps", "answers/s within the SLO"))}

TAIL = {"embed": "latency_ms_p95", "rerank": "latency_ms_p95", "rag": "ttfa_ms_p95"}  # the tie-break


@dataclass(frozen=True)
class Option:
    run_id: str
    scenario: str
    engines: str  # "sentence-transformers" or, for a pipeline, "embed X -> rerank Y -> generate Z"
    verdict: str
    slo_met: bool | None
    figures: dict[str, Any]  # the evidence: what the run measured, by result.json key
    reason: str = ""  # an excluded run: why


@dataclass(frozen=True)
class Ranking:
    task: str
    scenario: str
    ranked_by: str  # the unit the options are ordered by
    options: list[Option]
    excluded: list[Option] = field(default_factory=list)


class NoRetrievalRuns(ValueError):
    """No saved run of the task (and scenario) asked for; the message names the command that makes one."""


def load_runs(root: Path, task: str) -> list[dict[str, Any]]:
    """Every readable result.json of `task` under `root`, oldest run id first (an unreadable one is skipped)."""
    out = []
    for p in sorted(root.glob("*/result.json")) if root.is_dir() else []:
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and d.get("task", "embed") == task and isinstance(d.get("summary"), dict):
            out.append(d)
    return out


def _engines(d: dict[str, Any]) -> str:
    if "engines" in d:
        return " -> ".join(f"{k} {v.get('adapter', v.get('engine'))} ({Path(str(v.get('model'))).name})"
                           for k, v in d["engines"].items())
    e = d.get("engine", {})
    return f"{e.get('adapter', e.get('engine'))} ({Path(str(e.get('model'))).name})"


def _figures(task: str, s: dict[str, Any]) -> dict[str, Any]:
    if task == "rag":
        keys = ("answers_per_s", "goodput_rps", "usd_per_answer", "usd_per_good_answer", "bottleneck", "usd_per_hour")
        figs = {k: s.get(k) for k in keys}
        figs["ttfa_ms_p95"] = (s.get("ttfa_ms") or {}).get("p95")
        figs["e2e_ms_p95"] = (s.get("e2e_ms") or {}).get("p95")
        return figs
    keys = ("inputs_per_s", "tokens_per_s", "requests_per_s", "goodput_rps", "usd_per_million_tokens",
            "usd_per_million_inputs", "usd_per_hour")
    figs = {k: s.get(k) for k in keys}
    figs["latency_ms_p95"] = (s.get("latency_ms") or {}).get("p95")
    return figs


def _order(o: Option, task: str, priced: bool) -> tuple[int, float, float, str]:
    """SLO met, then the task's unit (cost up, or throughput down), then the p95 latency, then the run id."""
    (cost_key, _), (tput_key, _) = UNITS[task]
    v = o.figures.get(cost_key if priced else tput_key)
    x = (float(v) if v is not None else float("inf")) if priced else -(float(v) if v is not None else 0.0)
    tail = o.figures.get(TAIL[task])
    return {True: 0, None: 1, False: 2}[o.slo_met], x, float(tail) if tail is not None else float("inf"), o.run_id


def rank(runs: list[dict[str, Any]], task: str, scenario: str | None = None) -> list[Ranking]:
    """One ranking per scenario (sorted by name); NoRetrievalRuns when there is nothing to rank."""
    assert task in TASKS, task
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for d in runs:
        if scenario is None or d.get("scenario") == scenario:
            by_scenario.setdefault(str(d.get("scenario")), []).append(d)
    if not by_scenario:
        where = f" of scenario '{scenario}'" if scenario else ""
        make = "advisor rag" if task == "rag" else "advisor embed --scenario " + ("rerank" if task == "rerank"
                                                                                  else "embed-query")
        raise NoRetrievalRuns(f"no saved {task} run{where}; measure one with `{make}`")
    (cost_key, cost_unit), (tput_key, tput_unit) = UNITS[task]
    out = []
    for name, ds in sorted(by_scenario.items()):
        options, excluded = [], []
        for d in ds:
            s = d["summary"]
            o = Option(str(d.get("run_id")), name, _engines(d), str(s.get("verdict")), s.get("slo_met"),
                       _figures(task, s), "" if s.get("verdict") == "VALID"
                       else f"{s.get('verdict')}: {(s.get('reasons') or ['no reason saved'])[0]}")
            (options if s.get("verdict") == "VALID" else excluded).append(o)
        priced = bool(options) and all(o.figures.get(cost_key) is not None for o in options)
        options.sort(key=lambda o, p=priced: _order(o, task, p))
        unit = (f"{cost_unit}, lowest first" if priced else f"{tput_unit}, highest first"
                + (" (not every run has a price: give --price-usd-per-hour when measuring)" if options else ""))
        out.append(Ranking(task, name, f"SLO met first, then {unit}, then {TAIL[task]} lowest first",
                           options, excluded))
    return out
