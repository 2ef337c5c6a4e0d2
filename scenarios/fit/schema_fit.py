"""What a fit writes, brought within what the scenario schema accepts, with a note for each change.

A log can be burstier than any scenario may say (the Mooncake FAST'25 trace's in-burst gap CV is about
104; `on_cv` takes at most 100), so a fitted block is clamped field by field to the bounds the schema
(scenarios/spec.py) declares, and the fit report says which value was changed and what it means. The
mean rate is never changed: only shape parameters (CVs, burst lengths) are clamped.
"""

from __future__ import annotations

import math
import typing
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel

from scenarios import spec as S

_ARRIVALS: dict[str, type[BaseModel]] = {
    "constant": S.ConstantArrival, "poisson": S.PoissonArrival, "gamma": S.GammaArrival, "onoff": S.OnOffArrival,
    "batched": S.BatchedArrival, "profile": S.ProfileArrival, "closed": S.ClosedArrival,
    "offline": S.OfflineArrival, "trace": S.TraceArrival}
_EFFECT = {"cv": "gaps less bursty than the log's", "on_cv": "gaps inside a burst less bursty than the log's",
           "phase_cv": "burst lengths less varied than the log's", "off_cv": "idle lengths less varied than the log's",
           "think_cv": "think times less varied than the log's"}


def _constraints(model: type[BaseModel], name: str) -> list[Any]:
    """The field's constraints, also where they sit inside an optional type (`Annotated[float, ...] | None`)."""
    field = model.model_fields[name]
    found = list(field.metadata)
    for arg in typing.get_args(field.annotation):
        for m in getattr(arg, "__metadata__", ()):
            found += list(getattr(m, "metadata", [m]))
    return found


def _bounds(model: type[BaseModel], name: str) -> tuple[float | None, float | None]:
    lo = hi = None
    for m in _constraints(model, name):
        if isinstance(m, Ge | Gt):
            lo = float(m.ge if isinstance(m, Ge) else m.gt)
        elif isinstance(m, Le | Lt):
            hi = float(m.le if isinstance(m, Le) else m.lt)
    return lo, hi


def clamp_block(block: dict[str, Any], model: type[BaseModel], where: str) -> tuple[dict[str, Any], list[str]]:
    """`block` with every number within its field's schema bounds, and one note per change."""
    out, notes = dict(block), []
    for name, v in block.items():
        if name not in model.model_fields or isinstance(v, bool) or not isinstance(v, int | float):
            continue
        lo, hi = _bounds(model, name)
        new = v
        if not math.isfinite(v):
            new = hi if v > 0 and hi is not None else lo if lo is not None else v
        elif hi is not None and v > hi:
            new = hi
        elif lo is not None and v < lo:
            new = lo
        if new != v:
            out[name] = type(v)(new) if isinstance(v, int) else float(new)
            effect = _EFFECT.get(name, "the nearest value the schema accepts")
            notes.append(f"{where}.{name}: the log gives {v:.4g}, past the scenario schema's bound of {new:g}; "
                         f"written as {new:g} ({effect})")
    return out, notes


def clamp_arrival(spec: dict[str, Any], where: str = "arrival") -> tuple[dict[str, Any], list[str]]:
    model = _ARRIVALS.get(str(spec.get("process")))
    return clamp_block(spec, model, where) if model is not None else (dict(spec), [])


def clamp_sessions(spec: dict[str, Any], where: str = "sessions") -> tuple[dict[str, Any], list[str]]:
    return clamp_block(spec, S.SessionSpec, where)
