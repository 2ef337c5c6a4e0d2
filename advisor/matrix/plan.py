"""A matrix plan: named cells, each one engine x model x options x scenario x (a rate list or one run).

```yaml
name: cpu-engines            # optional; default: the file's name
defaults: {scenario: chat, duration: 20, warmup: 2}   # merged into every cell (the cell wins)
cells:
  - name: own-sweep
    engine: own
    rates: [0.5, 1, 2]       # a sweep (one engine start, rising rates)
  - engine: fake
    options: {ttft_ms: 5}
    rate: 4                  # one run; without `rate`/`rates`: one run at the scenario's rate
    resources: {CPU: 1, pool_a: 1}   # what the cell needs (Ray resources; CPU defaults to 1)
    accelerator: H100        # a hardware label: Ray's accelerator type
    labels: {zone: eu}       # Ray node labels the node must carry
    grid: {engine: [own, own-static], options.threads: [1, 2]}   # expands into one cell per combination
```

`load_plan` checks everything that needs no machine: unknown keys, engines, their options and scenarios,
overrides and every rate of a sweep (in range, and open-loop where a rate is given), resource names,
duplicate names. Every problem is one line of `PlanError.problems`, so all are fixed in one go (an unknown
key does not hide the cell's other problems). Whether a machine or a cluster can give a cell what it needs is checked by `advisor.matrix.needs`.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.run.config import MAX_STEPS
from scenarios.overrides import FLAGS, MAX_RATE_RPS, Overrides, flag
from scenarios.spec import Scenario
from scenarios.yaml_file import YamlFileError, read_yaml

# Cell keys that are scenario overrides, by the name the CLI flag has (the field of Overrides).
# a plan's keys are the bench flags without dashes (rate, max_output_tokens, full_scale): derived from the
# one flag-name map in scenarios/overrides.py, never listed a second time
OVERRIDE_KEYS = {flag(f).removeprefix("--").replace("-", "_"): f for f in (*FLAGS, "full_scale")}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# Ray's predefined resources are case-sensitive; a lower-case one is almost always a typo.
_BUILTIN = {"CPU", "GPU", "memory", "TPU", "NPU", "HPU", "neuron_cores"}


class PlanError(ValueError):
    """A plan that cannot run; one line per problem, each naming the cell and the fix."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class Cell(BaseModel):
    """One cell of the matrix: what to run and what the node that runs it must have."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    engine: str
    scenario: str
    model: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)  # engine options, as `--opt KEY=VALUE`
    rates: tuple[float, ...] | None = None  # a sweep over these rates
    rate: float | None = None  # one run at this rate
    duration: float | None = None
    warmup: float | None = None
    concurrency: int | None = None
    max_requests: int | None = None
    seed: int | None = None
    length_scale: float | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    full_scale: bool = False
    timeout_s: float = 600.0  # per request
    workers: int | str = "auto"  # load generators (advisor.loadgen.worker_spec): auto, N, or ray:N actors; on Ray, auto: at most the CPUs held
    repeats: int = Field(1, ge=1, le=100)  # runs of the cell (per step for a sweep), grouped (advisor.repeats.group)
    restart_engine: bool = False  # a fresh engine for every repeat
    resources: dict[str, float] = Field(default_factory=dict)
    accelerator: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    @property
    def is_sweep(self) -> bool:
        return self.rates is not None

    def overrides(self) -> Overrides:
        """The scenario overrides every run of this cell uses (a sweep sets the rate per step)."""
        kw = {field: v for key, field in OVERRIDE_KEYS.items()
              if (v := getattr(self, key)) is not None and v is not False}  # a given 0 (warmup: 0) is kept
        return Overrides(**kw)

    def cpus(self) -> float:
        """CPUs the cell holds: `resources.CPU`, else one per load-generator worker it asks for, else 1."""
        return float(self.resources.get("CPU", self.workers if isinstance(self.workers, int) else 1.0))

    def requirement(self) -> dict[str, float]:
        """Every resource the cell holds while it runs, as Ray counts them (CPU defaults to 1)."""
        req = {"CPU": self.cpus(), **{k: v for k, v in self.resources.items() if k != "CPU"}}
        if self.accelerator:
            req[f"accelerator_type:{self.accelerator}"] = 0.001  # what Ray's accelerator_type option asks for
        return {k: v for k, v in req.items() if v > 0}


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    cells: tuple[Cell, ...]
    source: dict[str, Any]  # the plan as written (recorded in matrix.json)

    def cell(self, name: str) -> Cell:
        return next(c for c in self.cells if c.name == name)

    def with_repeats(self, n: int) -> Plan:
        """Every cell that does not say its own `repeats:` runs n times (`advisor matrix --repeats N`)."""
        cells = tuple(c if "repeats" in c.model_fields_set else c.model_copy(update={"repeats": n})
                      for c in self.cells)
        return self.model_copy(update={"cells": cells})


def load_plan(path: Path) -> Plan:
    """Read and validate a plan file; raises PlanError listing every problem."""
    path = Path(path)
    if path.is_dir():
        raise PlanError([f"plan file {path} is a folder, not a plan file; give the path of a plan YAML"])
    if not path.is_file():
        raise PlanError([f"plan file {path} does not exist; give the path of a plan YAML (see README: Matrices)"])
    try:
        data = read_yaml(path)  # UTF-8, duplicate keys refused, the file named in every error
    except YamlFileError as e:
        raise PlanError([f"plan {e}"]) from None
    return plan_from_dict(data, default_name=path.stem, base_dir=path.resolve().parent)


def plan_from_dict(data: Any, *, default_name: str = "matrix", base_dir: Path | None = None) -> Plan:
    """Validate a parsed plan (see the module docstring for the layout)."""
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list) or not data["cells"]:
        raise PlanError(["a plan is a mapping with a non-empty `cells:` list (and optional `name:`, `defaults:`)"])
    unknown = sorted(set(data) - {"name", "defaults", "cells"})
    problems = [f"plan: unknown key '{k}' (a plan has name, defaults, cells)" for k in unknown]
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.append("plan: `defaults:` must be a mapping of cell keys")
        defaults = {}
    name = str(data.get("name") or default_name)
    if not _NAME.match(name):
        problems.append(f"plan: name {name!r} may hold only letters, digits, '.', '_' and '-'")
    cells: list[Cell] = []
    for i, raw in enumerate(data["cells"]):
        if not isinstance(raw, dict):
            problems.append(f"cell #{i + 1}: must be a mapping (engine, scenario, ...), got {raw!r}")
            continue
        for label, fields in _expand(i, {**defaults, **raw}, problems):
            cell = _cell(label, fields, base_dir, problems)
            if cell is not None:
                cells.append(cell)
    seen: set[str] = set()
    for c in cells:
        if c.name in seen:
            problems.append(f"cell '{c.name}': the name is used twice; give each cell its own `name:`")
        seen.add(c.name)
    if problems:
        raise PlanError(problems)
    return Plan(name=name, cells=tuple(cells), source=data)


def _expand(i: int, raw: dict[str, Any], problems: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """A cell with `grid: {key: [values]}` becomes one cell per combination, named base-value-value."""
    grid = raw.pop("grid", None)
    base = raw.get("name") or "-".join(str(raw.get(k)) for k in ("engine", "scenario") if raw.get(k))
    base = str(base or f"cell{i + 1}")
    if grid is None:
        return [(base, {**raw, "name": base})]
    if not isinstance(grid, dict) or not grid or not all(isinstance(v, list) and v for v in grid.values()):
        problems.append(f"cell '{base}': `grid:` must map keys to non-empty lists, e.g. {{engine: [own, own-static]}}")
        return []
    out = []
    for combo in itertools.product(*grid.values()):
        fields = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
        for key, value in zip(grid, combo):
            head, _, sub = key.partition(".")
            if sub:  # options.threads: 2 sets one engine option
                fields[head] = {**(fields.get(head) or {}), sub: value}
            else:
                fields[key] = value
        name = "-".join([base, *(_slug(v) for v in combo)])
        out.append((name, {**fields, "name": name}))
    return out


def _slug(v: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{v:g}" if isinstance(v, float) else str(v)).strip("_") or "x"


def _cell(label: str, fields: dict[str, Any], base_dir: Path | None, problems: list[str]) -> Cell | None:
    try:
        cell = Cell.model_validate(fields)
    except ValidationError as e:
        errors = e.errors()
        problems.extend(f"cell '{label}': {_describe(err)}" for err in errors)
        refused = {err["loc"][0] for err in errors if err["loc"]}
        try:  # the keys that did validate are checked too: every problem of the cell is said at once
            rest = Cell.model_validate({k: v for k, v in fields.items() if k not in refused})
        except ValidationError:
            return None  # a required key is missing or bad: its line is said above
        _check_cell(rest, base_dir, problems)
        return None
    bad = len(problems)
    cell = _check_cell(cell, base_dir, problems)
    return cell if len(problems) == bad else None


def _check_cell(cell: Cell, base_dir: Path | None, problems: list[str]) -> Cell:
    _check_name(cell, problems)
    _check_engine(cell, problems)
    cell, scenario = _check_scenario(cell, base_dir, problems)
    _check_runs(cell, scenario, problems)
    _check_resources(cell, problems)
    return cell


def _describe(err: Any) -> str:
    loc = ".".join(str(x) for x in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown key '{loc}' (a cell has: {', '.join(Cell.model_fields)}, grid)"  # grid: expanded first
    if err["type"] == "missing":
        return f"'{loc}' is missing"
    return f"{loc}: {err['msg']}, got {err.get('input')!r}"


def _check_name(cell: Cell, problems: list[str]) -> None:
    if not _NAME.match(cell.name):
        problems.append(f"cell '{cell.name}': a name may hold only letters, digits, '.', '_' and '-'")


def _check_engine(cell: Cell, problems: list[str]) -> None:
    import adapters  # imports no engine

    if cell.engine not in adapters.REGISTRY:
        problems.append(f"cell '{cell.name}': unknown engine '{cell.engine}'; choose one of "
                        f"{', '.join(sorted(adapters.REGISTRY))}")
        return
    try:  # typed options (a precision, a `sim:` device's spelling), checked now, not when the cell starts
        adapters.parse_options(cell.engine, cell.options)
    except adapters.OptionsError as e:
        problems.append(f"cell '{cell.name}': {e}")


def _check_scenario(cell: Cell, base_dir: Path | None, problems: list[str]) -> tuple[Cell, Scenario | None]:
    from scenarios.catalog import load_scenario
    from scenarios.errors import ScenarioError

    scenario = cell.scenario
    if base_dir is not None and ("/" in scenario or scenario.endswith((".yaml", ".yml"))):
        scenario = str((base_dir / Path(scenario).expanduser()).resolve())  # relative to the plan file
        cell = cell.model_copy(update={"scenario": scenario})
    try:
        return cell, load_scenario(scenario)
    except ScenarioError as e:
        problems.append(f"cell '{cell.name}': {e}")
    return cell, None


def _check_runs(cell: Cell, scenario: Scenario | None, problems: list[str]) -> None:
    if cell.rates is not None and cell.rate is not None:
        problems.append(f"cell '{cell.name}': give `rates:` (a sweep) or `rate:` (one run), not both")
    rates_ok = cell.rates is None or (bool(cell.rates) and all(math.isfinite(r) and r > 0 for r in cell.rates))
    if not rates_ok:
        problems.append(f"cell '{cell.name}': `rates:` must be a non-empty list of rates > 0, e.g. [0.5, 1, 2]")
    if not (math.isfinite(cell.timeout_s) and cell.timeout_s > 0):
        problems.append(f"cell '{cell.name}': timeout_s must be > 0 seconds, got {cell.timeout_s}")
    _check_workers(cell, problems)
    try:
        overrides = cell.overrides()
    except ValueError as e:
        problems.append(f"cell '{cell.name}': {_keys(str(e))}")
        return
    if cell.rates and rates_ok:  # every step of the sweep, as its run will ask for it
        if len(set(cell.rates)) > MAX_STEPS:
            problems.append(f"cell '{cell.name}': `rates:` may list at most {MAX_STEPS} rates, got {len(cell.rates)}")
        if max(cell.rates) > MAX_RATE_RPS:
            problems.append(f"cell '{cell.name}': `rates:` must each be at most {MAX_RATE_RPS:g} req/s, got "
                            f"{max(cell.rates):g}")
            return
        overrides = replace(overrides, rate_rps=max(cell.rates))
    if scenario is not None:
        from scenarios.errors import ScenarioError
        from scenarios.schedule import resolve

        try:  # a rate for a closed-loop scenario, users for an open one, a window for an offline one
            resolve(scenario, overrides)
        except ScenarioError as e:
            problems.append(f"cell '{cell.name}': {_keys(str(e), rate_key='rates' if cell.is_sweep else 'rate')}")


def _keys(message: str, rate_key: str = "rate") -> str:
    """A message of Overrides or the scenario, which name the CLI flags, in the plan's keys (`--rate` -> rate)."""
    for key, field in OVERRIDE_KEYS.items():
        message = re.sub(re.escape(flag(field)) + r"\b", rate_key if field == "rate_rps" else key, message)
    return message


def _check_workers(cell: Cell, problems: list[str]) -> None:
    import adapters
    from advisor.loadgen import worker_spec

    try:
        w = worker_spec.parse(cell.workers, name=f"cell '{cell.name}': workers")
    except worker_spec.WorkersError as e:
        problems.append(str(e))
        return
    if w == "auto":
        return
    if worker_spec.several(w) and cell.engine in adapters.REGISTRY \
            and not adapters.adapter_class(cell.engine).capabilities.served:
        problems.append(f"cell '{cell.name}': workers: {w}, but only a served engine (openai) is driven by several "
                        f"processes; '{cell.engine}' runs in advisor and keeps one driver: drop `workers:`")
    elif isinstance(w, int) and "CPU" in cell.resources and cell.resources["CPU"] < w:
        problems.append(f"cell '{cell.name}': workers: {w} needs resources.CPU >= {w} (a core per worker), "
                        f"got {cell.resources['CPU']:g}")


def _check_resources(cell: Cell, problems: list[str]) -> None:
    for name, amount in cell.resources.items():
        if not name or any(ch.isspace() for ch in name):
            problems.append(f"cell '{cell.name}': resource name {name!r} is empty or has spaces")
        elif name not in _BUILTIN and name.upper() in {b.upper() for b in _BUILTIN}:
            right = next(b for b in _BUILTIN if b.upper() == name.upper())
            problems.append(f"cell '{cell.name}': unknown resource '{name}' (resource names are case-sensitive: "
                            f"did you mean '{right}'?)")
        elif name == "object_store_memory":
            problems.append(f"cell '{cell.name}': object_store_memory is not a resource a cell can ask for")
        if not (isinstance(amount, int | float) and math.isfinite(amount) and amount >= 0):
            problems.append(f"cell '{cell.name}': resource {name} must be a number >= 0, got {amount!r}")
    if cell.accelerator is not None and not _NAME.match(cell.accelerator):
        problems.append(f"cell '{cell.name}': accelerator {cell.accelerator!r} is not an accelerator type "
                        "(Ray's names: H100, A100, L4, ...)")
