"""Run one cell here: check that this node has what the cell names, then a benchmark or a sweep.

`run_cell(cell, out_dir)` is the one place the matrix calls the benchmark library (`run_bench` for one
run, `run_sweep` for a rate list), locally and on a Ray node alike, so a cell runs the same code path
wherever it is placed. Its runs are saved under `out_dir` exactly as `advisor bench`/`advisor sweep`
save them; the runner moves them into the runs store.

Before anything starts, `check_here(cell)` looks for everything the cell names on this node: the engine's
packages, the model (folder or cache name), a launched server's program and the model paths in its
command (bare absolute paths, and the values of -m/--model*/--tokenizer*), the scenario file. A missing
one fails the cell with the path it could not find.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from advisor.matrix.plan import Cell
from advisor.sweep.capacity import SweepPoint


class CellError(RuntimeError):
    """The cell cannot run on this node; the message names what is missing and where it looked."""


@dataclass(frozen=True)
class CellRuns:
    run_ids: tuple[str, ...]
    sweep_id: str | None = None


def run_cell(cell: Cell, out_dir: Path, on_progress: Callable[[str], None] | None = None,
             cpus_held: float | None = None) -> CellRuns:
    """Run the cell's benchmark (one run, or its repeats) or sweep (its rates) on one engine; runs under `out_dir`.

    `cpus_held`: the CPUs a scheduler gave the cell (Ray); its `workers: auto` then uses no more than those,
    and still one worker for a light open loop, by the same rule as here (advisor.loadgen.workers.count).
    """
    from advisor.run.bench import BenchConfig, bench_once, open_engine, plan, run_bench

    check_here(cell)
    bench = BenchConfig(scenario=cell.scenario, engine=cell.engine, model=cell.model, overrides=cell.overrides(),
                        engine_options=dict(cell.options), out_dir=Path(out_dir), timeout_s=cell.timeout_s,
                        workers=cell.workers, auto_workers_cap=_auto_cap(cell, cpus_held))
    if cell.is_sweep:
        from advisor.sweep.run import SweepConfig, run_sweep

        assert cell.rates is not None
        cfg = SweepConfig(bench, rates=tuple(cell.rates), repeats=cell.repeats, restart_engine=cell.restart_engine)
        first = plan(cfg.step_config(cfg.load_plan()[0]))

        def step(p: SweepPoint) -> None:
            if on_progress is not None:
                verdict = "pass" if p.passes else f"FAIL: {p.failure()}"
                on_progress(f"{p.label()}: {verdict} (achieved {p.achieved_rps:.2f} req/s, run {p.run_id})")

        with open_engine(bench, first.options) as adapter:
            res = run_sweep(cfg, adapter, on_step=step)
        return CellRuns(tuple(r for p in res.points for r in (p.run_ids or (p.run_id,))), res.sweep_id)
    planned = plan(bench)
    if cell.repeats == 1 and not cell.restart_engine:
        with open_engine(bench, planned.options) as adapter:
            return CellRuns((run_bench(bench, adapter, planned=planned).run_id,))
    from advisor.repeats.group import run_repeats

    if cell.restart_engine:
        group = run_repeats(lambda i: bench_once(bench), cell.repeats, label=cell.name, restart_engine=True)
    else:
        with open_engine(bench, planned.options) as adapter:
            group = run_repeats(lambda i: run_bench(bench, adapter, planned=planned), cell.repeats, label=cell.name)
    return CellRuns(tuple(r.run_id for r in group.runs))


def _auto_cap(cell: Cell, cpus_held: float | None) -> int | None:
    """At most how many workers the cell's `workers: auto` may use: under a scheduler, the CPUs it holds."""
    if cell.workers != "auto" or cpus_held is None:
        return None
    return max(1, int(cpus_held))


def check_here(cell: Cell) -> None:
    """Raise CellError naming the first thing the cell needs that this node lacks."""
    import adapters

    host = socket.gethostname()
    why = adapters.why_unavailable(cell.engine)
    if why:
        raise CellError(f"engine '{cell.engine}' is not available on {host}: {why}")
    if cell.model is not None:
        _check_model(cell, host)
    tokenizer = cell.options.get("tokenizer")
    if isinstance(tokenizer, str) and _explicit_path(tokenizer) and not Path(tokenizer).expanduser().exists():
        raise CellError(f"tokenizer {Path(tokenizer).expanduser()} not found on {host}")
    launch = cell.options.get("launch")
    if isinstance(launch, str):
        _check_launch(launch, host)
    if ("/" in cell.scenario or cell.scenario.endswith((".yaml", ".yml"))) \
            and not Path(cell.scenario).expanduser().is_file():
        raise CellError(f"scenario file {Path(cell.scenario).expanduser()} not found on {host}")


def _explicit_path(s: str) -> bool:
    return s.startswith(("/", "~", "./", "../"))


def _check_model(cell: Cell, host: str) -> None:
    """A path must exist; for engines whose model is a local folder (`Capabilities.model_source`), a name must be
    in the model cache.

    Other names (a served model's, a hub id an engine fetches itself) are the server's or the engine's.
    """
    import adapters
    from model_cache.paths import DEFAULT_MODEL, models_root

    model = str(cell.model)
    if _explicit_path(model):
        path = Path(model).expanduser()
        if not path.exists():
            raise CellError(f"model {path} not found on {host}; copy it there or point `model:` at a path it has")
    elif adapters.adapter_class(cell.engine).capabilities.model_source == "folder" and model != DEFAULT_MODEL and not Path(model).is_dir() \
            and not (models_root() / model).is_dir():
        raise CellError(f"model '{model}' not found on {host}: no folder {model} and no {models_root() / model}; "
                        f"create it there with `advisor models create {model} --preset P` or copy the folder")


# Flags of server commands whose value is a file or folder on this node (model weights, tokenizer).
_PATH_FLAG = re.compile(r"^(-m|--(model|tokenizer)([-_][a-z_-]*)?)$")


def _check_launch(command: str, host: str) -> None:
    """The server program, and the paths the command gives as model/tokenizer flags or bare arguments."""
    from adapters.launch import split_command

    argv, env = split_command(command)
    program = argv[0]
    if "/" in program:
        if not (Path(program).expanduser().is_file() and os.access(Path(program).expanduser(), os.X_OK)):
            raise CellError(f"server program {program} not found (or not executable) on {host}")
    elif shutil.which(program, path=env.get("PATH", os.environ.get("PATH"))) is None:
        raise CellError(f"server program '{program}' not found on {host} (not on PATH); install it there")
    previous = program
    for word in argv[1:]:
        flag, eq, value = word.partition("=")
        if word.startswith("-") and eq:
            candidate = value if _PATH_FLAG.match(flag) else None
        elif word.startswith("-"):
            candidate = None
        else:  # a bare argument (`vllm serve /models/x`) or the value of a path flag (`-m /models/x.gguf`)
            candidate = word if not previous.startswith("-") or _PATH_FLAG.match(previous) else None
        if candidate and candidate.startswith("/") and not Path(candidate).exists():
            raise CellError(f"server command names {candidate}, which does not exist on {host}")
        previous = word
