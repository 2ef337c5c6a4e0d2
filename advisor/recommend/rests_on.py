"""What a recommendation's headline rests on, in one line, and the warnings that weaken it.

The headline names an engine and a GPU; a buyer also needs the model and whether its weights were real, the
precision, where the figures come from, and what makes them weaker than they read: own_engine is
advisor's built-in reference engine, a model made by `advisor models create` has seeded random weights, a
host-bound run measured the engine's host path, one run has no interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

import adapters
from advisor.hardware.systems import param_count
from advisor.recommend.ranking import Row
from advisor.saved.store import RunResult
from model_cache.presets import PRESETS


def _weights(run: RunResult | None, name: str) -> str:
    """Whether the weights were real: recorded by the engine where it says, else read from the model's name."""
    said = (run.engine.extra.get("weights") if run is not None else None) or ""
    if said:
        return str(said)
    if name in PRESETS:
        return f"seeded random weights, by its name (advisor's preset {name}): speed only, no quality claim"
    return "weights as supplied (not checked by advisor)"


def _evidence(best: Row) -> str:
    """The evidence class first (`Candidate.evidence_class`), then how many runs or what the estimate rests on."""
    c = best.candidate
    if c.source == "estimated":
        base = f" {c.run_id}" if c.evidence_class == "extrapolated from a run" and c.run_id else ""
        return f"{c.evidence_class}{base}: {c.evidence_note}" if c.evidence_note else c.evidence_class + base
    runs = f"{c.repeats} runs" if c.repeats > 1 else "1 run"
    return f"{c.evidence_class} ({runs})"


def model_name(model: str) -> str:
    """A model as the headline names it: a folder's last part (a hub id or preset name as it is)."""
    return PurePath(model).name or model


def _builtin(engine: str) -> bool:
    caps = adapters.capabilities(engine)
    return caps is not None and caps.builtin


def rests_on(best: Row, runs: Sequence[RunResult] = ()) -> str:
    """'own (advisor's built-in reference engine), model llama-1b (1.04B, seeded random weights ...), bf16, on
    NVIDIA H200, measured on recorded hardware (1 run)'."""
    c = best.candidate
    run = next((r for r in runs if r.run_id == c.run_id), None)
    engine = c.engine + (" (advisor's built-in reference engine, not a production server)"
                         if _builtin(c.engine) else "")
    name = model_name(c.model)
    size = f"{param_count(c.n_params)} parameters, " if c.n_params else ""
    return (f"{engine}; model {name} ({size}{_weights(run, name)}); {c.precision or c.config}; on "
            f"{best.hardware_name}; {_evidence(best)}")


def memory_price_warning(best: Row) -> str | None:
    """The headline's price is from memory (no citable source in the catalog): its cost is not headlined."""
    if not best.price_from_memory or best.usd_per_hour is None:
        return None
    hw = best.candidate.hardware_id
    return (f"the catalog's price for {hw} (${best.usd_per_hour:,.4g}/h) is from memory, not from a citable source, so "
            f"the headline gives no cost; pass --price {hw}=USD_PER_HOUR (your quote) to cost it")


def headline_warnings(best: Row) -> tuple[str, ...]:
    """Host-bound, single-run and a from-memory price: what the headline is not (capacity_warnings has its size)."""
    c, out = best.candidate, []
    if (w := memory_price_warning(best)) is not None:
        out.append(w)
    if c.source == "measured" and c.bound == "host-bound":
        why = next((a for a in c.assumptions if a.startswith("host-bound")), "host-bound: it measured the engine's "
                   "host path, not the GPU")
        out.append(f"the headline's run was {why}; a faster GPU need not serve more")
    if c.source == "measured" and c.repeats <= 1:
        out.append("the headline rests on a single run: its figures have no interval; `--repeats 3` would give one")
    return tuple(out)
