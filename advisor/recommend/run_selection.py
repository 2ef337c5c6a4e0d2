"""Which saved runs a recommendation and a report rest on, and why each other run is left out.

`advisor recommend` and `advisor report` both call `select_runs`, so the report's charts and cost
tables show exactly the runs the ranking used, and both name every run left out with its reason. In
order: runs of another model than `--model-config` sizes; runs of another scenario than the one
asked for; runs that buy nothing (the test engine 'fake' serves no model, own_engine's simulated
device is no hardware) when any other run is left; and, per scenario, the runs of every workload but
the one sized (`workloads.py`). A run whose verdict is not VALID stays: the ranking shows it as
evidence that cannot carry a recommendation (it never sets a capacity or a price) and the report
flags it. The estimator's own, narrower choice of calibration runs is `error_bars.ineligible`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import adapters
from adapters import TEST_ENGINE
from advisor.recommend.workloads import pick_workload
from advisor.saved.store import RunResult
from fileform import FileForm

if TYPE_CHECKING:
    from advisor.sizing.architecture import Architecture

Kind = Literal["model", "scenario", "buys nothing", "workload"]


@dataclass(frozen=True)
class LeftOut(FileForm):
    run_id: str
    kind: Kind
    reason: str  # a clause: "it ran scenario 'rag', not the scenario asked for ('chat')"

    def line(self) -> str:
        return f"run {self.run_id} left out: {self.reason}"


@dataclass(frozen=True)
class RunSelection:
    included: tuple[RunResult, ...]
    left_out: tuple[LeftOut, ...] = ()
    held_scenarios: tuple[str, ...] = ()  # the scenarios of the runs before the scenario was picked
    model_note: str | None = None  # one line for the runs of other models
    test_note: str | None = None  # one line for the runs that buy nothing (or that only such runs were given)
    workload_notes: tuple[str, ...] = ()  # one line per scenario whose runs ran several workloads

    @property
    def included_ids(self) -> tuple[str, ...]:
        return tuple(r.run_id for r in self.included)

    @property
    def scenarios(self) -> tuple[str, ...]:
        return tuple(sorted({r.scenario_name or "?" for r in self.included}))

    def lines(self, kind: Kind) -> list[str]:
        return [x.line() for x in self.left_out if x.kind == kind]

    def to_dict(self) -> dict[str, Any]:  # hand-written: a computed view (JSON built from properties, never read back)
        return {"included": list(self.included_ids), "left_out": [x.to_dict() for x in self.left_out]}


_BUYS_NOTHING: tuple[tuple[str, str, Callable[[RunResult], bool]], ...] = (
    (f"of the test engine '{TEST_ENGINE}'", "it serves no model", lambda r: is_test_engine(str(r.engine.adapter))),
    ("on own_engine's simulated device", "its step times are no hardware's",
     lambda r: bool(r.engine.extra.get("simulated_device"))),
)


def is_test_engine(adapter: str) -> bool:
    """An engine with no model behind it (`Capabilities.model_source` "none"): never a deployment to buy."""
    caps = adapters.capabilities(adapter)
    return caps is not None and caps.model_source == "none"


def buys_nothing(run: RunResult) -> tuple[str, str] | None:
    """(what, why) when the run measured no deployment one could buy; None for a real engine on real hardware."""
    return next(((what, why) for what, why, test in _BUYS_NOTHING if test(run)), None)


def select_runs(runs: Sequence[RunResult], scenario: str | None = None,
                model: Architecture | None = None) -> RunSelection:
    """The runs to rank and report, and each run left out with why (see the module's docstring for the order)."""
    runs, left = list(runs), []
    model_note = None
    if model is not None:
        from advisor.recommend.model_config import same_shape

        other = [r for r in runs if not same_shape(r, model)]
        runs = [r for r in runs if same_shape(r, model)]
        left += [LeftOut(r.run_id, "model", f"another model: --model-config sizes {model.name}") for r in other]
        if other:
            model_note = (f"{len(other)} run(s) of other models left out: --model-config sizes {model.name}, and "
                          "only runs of its shape (hidden, layers, heads, KV heads, intermediate, vocab) are its rows")
    held = tuple(sorted({r.scenario_name or "?" for r in runs}))
    if scenario:
        left += [LeftOut(r.run_id, "scenario", f"it ran scenario {r.scenario_name or '?'!r}, not the scenario asked "
                         f"for ({scenario!r})") for r in runs if r.scenario_name != scenario]
        runs = [r for r in runs if r.scenario_name == scenario]
    runs, bought, test_note = _drop_what_buys_nothing(runs)
    left += bought
    kept: set[str] = set()
    notes = []
    for name in dict.fromkeys(r.scenario_name for r in runs):  # per scenario: a workload is one scenario's
        chosen, note, others = pick_workload([r for r in runs if r.scenario_name == name])
        kept |= {r.run_id for r in chosen}
        left += [LeftOut(r.run_id, "workload", why) for r, why in others]
        notes += [note] if note else []
    return RunSelection(tuple(r for r in runs if r.run_id in kept), tuple(left), held, model_note, test_note,
                        tuple(notes))


def _drop_what_buys_nothing(runs: list[RunResult]) -> tuple[list[RunResult], list[LeftOut], str | None]:
    """Leave out the runs that buy nothing when any other run is left; say so either way."""
    marks = {r.run_id: m for r in runs if (m := buys_nothing(r))}
    if not marks:
        return runs, [], None
    whats = list(dict.fromkeys(what for what, _ in marks.values()))
    real = [r for r in runs if r.run_id not in marks]
    if not real:
        return runs, [], (f"only runs {' and '.join(whats)}: this ranking shows how the tool works, "
                          "not what to buy")
    left = [LeftOut(rid, "buys nothing", f"a run {what}: {why}") for rid, (what, why) in marks.items()]
    whys = dict(marks.values())
    note = "; ".join(f"{sum(1 for w, _ in marks.values() if w == what)} run(s) {what} left out: {whys[what]}"
                     for what in whats)
    return real, left, note
