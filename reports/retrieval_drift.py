"""The report's embedding and rerank quality drift, beside the speed of the embed and rerank runs.

Reads the `advisor verify` documents saved under `<embed runs>/verify/` (task embed or rerank; the newest per
task and model, by its time-stamped file name) and matches each saved embed or rerank run to the drift row of
its engine, precision and model (by folder name), so a run's speed and its engine's drift from the
sentence-transformers fp32 reference are read in one row. A run with no matching row says so; nothing is
estimated. Definitions: docs/metrics.md ("Embedding quality drift", "Rerank quality drift").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TASKS = ("embed", "rerank")


def load_drift_docs(root: Path) -> list[dict[str, Any]]:
    """The newest readable `advisor verify` drift document per (task, model) under `root/verify`, by task then model."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    folder = Path(root) / "verify"
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:  # time-stamped names: later files win
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and d.get("task") in TASKS and isinstance(d.get("quality_drift"), list):
            newest[(str(d["task"]), Path(str(d.get("model"))).name)] = {**d, "file": p.name}
    return [newest[k] for k in sorted(newest)]


def drift_text(task: str, row: dict[str, Any]) -> str:
    """One drift row in words: the figures docs/metrics.md defines, or the row's error."""
    if row.get("status") != "ok":
        return f"not measured: {row.get('error') or row.get('status')}"

    def f(key: str, spec: str) -> str:
        return "-" if row.get(key) is None else format(row[key], spec)

    if task == "rerank":
        k = row.get("k", 10)
        return (f"top-{k} agreement {f('topk_overlap_mean', '.3f')} (min {f('topk_overlap_min', '.3f')}), "
                f"Kendall tau-b {f('kendall_tau_mean', '.4f')} (min {f('kendall_tau_min', '.4f')}), "
                f"max |score diff| {f('score_max_abs_diff', '.2e')}")
    return (f"cosine min {f('cosine_min', '.4f')} (mean {f('cosine_mean', '.4f')}), recall@{row.get('k', 10)} "
            f"overlap {f('recall_overlap_mean', '.3f')} (min {f('recall_overlap_min', '.3f')})")


def drift_context(root: Path, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the template shows: the drift documents as tables, and each embed or rerank run's matching drift."""
    docs = load_drift_docs(root)
    rows: dict[tuple[str, str, str, str], tuple[str, dict[str, Any]]] = {}
    tables = []
    for d in docs:
        for r in d["quality_drift"]:
            rows[(d["task"], Path(str(d.get("model"))).name, str(r.get("engine")), str(r.get("precision")))] = (
                d["file"], r)
        tables.append({"task": d["task"], "model": d.get("model"), "reference": d.get("reference"),
                       "file": d["file"], "rows": [{"engine": r.get("engine"), "precision": r.get("precision"),
                                                    "status": r.get("status"), "text": drift_text(d["task"], r)}
                                                   for r in d["quality_drift"]]})
    by_run = {}
    for run in runs:
        task, e = run.get("task", "embed"), run.get("engine") or {}
        if task not in TASKS:
            continue
        key = (task, Path(str(e.get("model"))).name, str(e.get("adapter")), str(e.get("precision") or "fp32"))
        found = rows.get(key)
        by_run[str(run.get("run_id"))] = (f"{drift_text(task, found[1])} ({found[0]})" if found else
                                          f"not verified: no `advisor verify --model {key[1]}` row for {key[2]} "
                                          f"{key[3]}")
    return {"tables": tables, "by_run": by_run}
