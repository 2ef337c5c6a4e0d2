"""Why a hardware the user allowed has no row: one line per (engine and model, reason), naming the hardware.

Reasons come from the estimator (`estimates.py`: no claim for the hardware's stack, no run an estimate
may rest on, weights that do not fit); a hardware with no row and no reason from it (estimates off)
still gets a line, so every allowed hardware is either ranked or explained.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class NoRow:
    subject: str  # "own (llama-1b, bf16 / hf / continuous)": the measured engine, model and config
    hardware_id: str
    why: str


def no_row_lines(reasons: Iterable[NoRow], allowed: Iterable[str], have_row: set[str],
                 estimates_on: bool = True) -> list[str]:
    """'mi300x: no row for own (...): own has no claim to run on rocm (engines.yaml); no measured run'."""
    allowed = tuple(allowed)
    by: dict[tuple[str, str], list[str]] = {}
    for r in reasons:
        if r.hardware_id in allowed:
            by.setdefault((r.subject, r.why), []).append(r.hardware_id)
    lines = [f"{', '.join(dict.fromkeys(ids))}: no row for {subject}: {why}; no measured run"
             for (subject, why), ids in by.items()]
    said = {h for ids in by.values() for h in ids}
    bare = [h for h in allowed if h not in have_row and h not in said]
    if bare:
        why = "estimates are off (--no-estimates)" if not estimates_on else "no run could be extrapolated to it"
        lines.append(f"{', '.join(bare)}: no row: {why}; no measured run")
    return lines
