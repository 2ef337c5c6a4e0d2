"""Flags shared by the commands, declared once (bench/sweep/matrix, recommend/hardware), and their conversion.

`engine_flags`, `scenario_flags` and `run_flags` are decorators; a command that
takes them receives the values as keyword arguments and turns them into a
`BenchConfig` with `bench_config(...)`. The scenario flags' names come from
`scenarios.overrides.FLAGS` (the one flag-name map). A flag's default is the
config type's (`default(BenchConfig, "timeout_s")`): declared once, in the type
the flag fills, and checked once, there (`--workers` is parsed by `BenchConfig`).
A zero that means something is kept (`--warmup 0`); a bad value is a usage
error naming the flag and the valid range, raised before anything runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from advisor.run_config import MAX_REPEATS, BenchConfig, SweepConfig
from advisor_cli.server_hardware import server_hardware_flags, server_hardware_from
from scenarios.overrides import FLAGS
from scenarios.prompts import MAX_PROMPT_TOKENS


def fail(message: str) -> NoReturn:
    raise click.UsageError(message)


def default(config: type, name: str) -> Any:
    """The default a config dataclass declares for `name`: a flag that fills that field shows and uses it."""
    found = next(f for f in dataclasses.fields(config) if f.name == name)
    if found.default is not dataclasses.MISSING:
        return found.default
    if found.default_factory is not dataclasses.MISSING:
        return found.default_factory()
    raise TypeError(f"{config.__name__}.{name} declares no default")


RUNS: Path = default(BenchConfig, "out_dir")  # the runs store: --out of bench/sweep/matrix, --runs of the readers


def _stack(options: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def deco(f: Any) -> Any:
        for o in reversed(options):
            f = o(f)
        return f
    return deco


_OVERRIDE_HELP = {
    "rate_rps": ("Request rate (req/s) instead of the scenario's.", float),
    "duration_s": ("Measurement window in seconds.", float),
    "warmup_s": ("Warm-up seconds before the window (excluded; 0 for none).", float),
    "concurrency": ("Closed-loop users (closed-loop scenarios).", int),
    "max_requests": ("Cap the number of requests.", int),
    "seed": ("Schedule seed (same seed, same requests).", int),
    "length_scale": ("Multiply input and output token lengths.", float),
    "max_input_tokens": ("Cap prompt lengths.", int),
    "max_output_tokens": ("Cap output lengths.", int),
}


def scenario_flags(*, skip: tuple[str, ...] = ()) -> Callable[[Any], Any]:
    """--scenario and the overrides that fit it to a machine (`skip`: fields a command sets itself)."""
    opts = [click.option("--scenario", "-s", default=None,
                         help="Scenario name (see `advisor scenarios`) or a path to a YAML file.")]
    for name, (text, typ) in _OVERRIDE_HELP.items():
        if name not in skip:
            opts.append(click.option(FLAGS[name], name, type=typ, default=None, help=text))
    opts.append(click.option("--full-scale", "full_scale", is_flag=True,
                             help="Use the scenario's real traffic shape, not its small-machine fit."))
    return _stack(opts)


engine_flags = _stack([
    click.option("--engine", "-e", default=default(BenchConfig, "engine"), show_default=True, help="Engine adapter (see `advisor engines`)."),
    click.option("--model", "-m", default=None,
                 help="Model folder or name in the model cache; default: the built-in tiny model."),
    click.option("--threads", type=int, default=None,
                 help="Engine CPU threads (default: all CPUs but one, the client's)."),
    click.option("--device", default=None, help="Engine device: auto, cpu, cuda; own also runs on a simulated GPU, sim:h200 or "
                 "sim:1=2.2,64=3.4,prefill=7.6 (docs/engines.md; never priced)."),
    click.option("--url", default=None, help="Server URL for the openai engine."),
    click.option("--launch", default=None, help="Server command advisor starts, benchmarks and stops (openai engine)."),
    click.option("--opt", "opts", multiple=True, metavar="KEY=VALUE",
                 help="Engine option (repeatable); `advisor engines --json` lists each engine's options."),
    *server_hardware_flags,
])

repeat_flags = _stack([
    click.option("--repeats", type=click.IntRange(1, MAX_REPEATS), default=default(SweepConfig, "repeats"),
                 show_default=True,
                 help="Run the same cell N times: each an ordinary saved run, grouped, reported as median "
                      "[interval] (docs/metrics.md, 'Repeats')."),
    click.option("--restart-engine", is_flag=True, help="Start the engine afresh for every repeat (default: one "
                 "engine serves every repeat)."),
])

def out_folder(value: Path | str) -> Path:
    """--out as given: an empty one would save into the current folder, so it is refused."""
    if not str(value).strip() or str(value) in (".", "./"):
        raise click.BadParameter("give a folder for the runs (an empty --out would save into the current folder); "
                                 f"the default is {RUNS}", param_hint="--out")
    return Path(value)


run_flags = _stack([
    click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
                 default=RUNS, show_default=True, help="Folder for saved runs.", callback=lambda c, p, v: out_folder(v)),
    click.option("--timeout", "timeout_s", type=float, default=default(BenchConfig, "timeout_s"), show_default=True,
                 help="Per-request timeout (s)."),
    click.option("--workers", "workers", default=default(BenchConfig, "workers"), show_default=True, metavar="N|auto|ray:N",
                 help="Load generators for a served engine (one schedule, sharded): N processes here, at most one "
                      "per CPU advisor may use (a worker beyond that only shares a CPU and costs an interpreter) "
                      "(auto: one while an open loop's peak rate is well within one process's measured capacity, "
                      "else one per CPU the client may use), or ray:N, N Ray actors spread over a cluster's nodes. "
                      "In-process engines keep one driver."),
    click.option("--ray", "ray", default=None, metavar="ADDRESS|auto",
                 help="With --workers ray:N: the Ray cluster (HOST:PORT, ray://HOST:10001 or auto; default auto: "
                      "RAY_ADDRESS, a cluster running here, else a new local one)."),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else."),
    click.option("--max-request-tokens", type=int, default=None, metavar="N",
                 help="Longest request (prompt + output tokens) to build when the engine states no context "
                      f"length (default {default(BenchConfig, 'max_request_tokens'):,}; at most {MAX_PROMPT_TOKENS:,}). "
                      "An engine's stated context always wins."),
    click.option("--memory-budget", "memory_budget_gb", type=float, default=None, metavar="GB",
                 help="The most memory a run's plan may need (requests x their output tokens kept, prompts in "
                      "flight), checked before anything starts; default: half of this machine's memory."),
])


price_flags = _stack([
    click.option("--prices", type=click.Path(path_type=Path), default=None,
                 help="YAML of price overrides: `prices: {h100-sxm: 2.10}` (a negotiated price wins)."),
    click.option("--price", multiple=True, metavar="ID=USD", help="Price override per device-hour (repeatable)."),
])


def catalog_from_flags(prices: Path | None, price: tuple[str, ...]) -> Any:
    """The hardware catalog with the `--prices`/`--price` overrides; a bad one is a usage error."""
    from advisor.catalog import CatalogError, load_catalog, parse_price_flags

    try:
        return load_catalog(prices, parse_price_flags(price))
    except CatalogError as e:
        raise click.UsageError(str(e)) from None


def overrides_from(flags: dict[str, Any]) -> Any:
    """Overrides from the scenario flags; given zeros are kept (and judged), a bad value fails with its flag."""
    from scenarios.overrides import Overrides

    kwargs = {k: v for k, v in flags.items() if k in _OVERRIDE_HELP and v is not None}
    if flags.get("full_scale"):
        kwargs["full_scale"] = True
    try:
        return Overrides(**kwargs)
    except (TypeError, ValueError) as e:
        fail(str(e))


def _parse_value(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(v.lower(), v)


def engine_options(opts: tuple[str, ...], **named: Any) -> dict[str, Any]:
    """`--opt KEY=VALUE` and the named engine flags as one mapping (typed later by the adapter's Options)."""
    out = {k: v for k, v in named.items() if v is not None}
    for o in opts:
        key, sep, value = o.partition("=")
        if not sep or not key.strip():
            fail(f"--opt expects KEY=VALUE, got {o!r}")
        key, parsed = key.strip().replace("-", "_"), _parse_value(value.strip())
        if named.get(key) is not None and named[key] != parsed:
            fail(f"--{key} {named[key]} and --opt {key}={value.strip()} disagree; give one of them")
        out[key] = parsed
    return out


def check_engine_options(engine: str, options: dict[str, Any]) -> None:
    """An unknown engine, or an option it does not take or a value it refuses, is a usage error (exit 2)."""
    import adapters

    try:
        adapters.parse_options(engine, options)
    except (adapters.OptionsError, adapters.EngineUnavailable) as e:  # EngineUnavailable: a name not registered
        fail(str(e))


def check_scenario(scenario: str) -> None:
    """An unknown scenario name or a bad scenario file is a usage error (exit 2), as an unknown engine is."""
    from scenarios.catalog import load_scenario
    from scenarios.errors import ScenarioError

    try:
        sc = load_scenario(scenario)  # validation only: a trace file is read when the schedule is built
    except ScenarioError as e:
        fail(str(e))
    if sc.workload.task != "generate":
        fail(f"scenario '{sc.name}' is an {sc.workload.task} scenario: run it with `advisor embed --scenario {scenario}`")


def check_model_task(model: str | None) -> None:
    """An embedding model given to a generation command is a usage error (exit 2), before anything starts."""
    from model_cache.model_task import task_mismatch
    from model_cache.paths import models_root

    if model is None:
        return
    folder = next((p for p in (Path(model).expanduser(), models_root() / model) if p.is_dir()), None)
    if folder is not None and (why := task_mismatch(folder, "generate")) is not None:
        fail(why)


def bench_config(*, scenario: str | None, engine: str, model: str | None, opts: tuple[str, ...],
                 threads: int | None, device: str | None, url: str | None, launch: str | None, out_dir: Path,
                 timeout_s: float, workers: str | int | None = None, ray: str | None = None,
                 max_request_tokens: int | None = None, memory_budget_gb: float | None = None, server_hardware: str | None = None,
                 server_hardware_count: int = 1, server_where: str | None = None, server_metrics: str | None = None,
                 **flags: Any) -> Any:
    """The BenchConfig the shared flags describe; every problem is a usage error before anything starts.

    A flag left at None (a caller without it) takes BenchConfig's own default; BenchConfig checks every
    value once (`--workers` included) and its BenchError becomes the usage error.
    """
    from adapters.placement import available_cpus
    from advisor.loadgen import worker_spec
    from advisor.run_config import BenchError

    if not scenario:
        fail("--scenario is required (see `advisor scenarios`)")
    check_scenario(scenario)
    check_model_task(model)
    served = server_hardware_from(engine, server_hardware, server_hardware_count, server_where, server_metrics)
    options = engine_options(opts, threads=threads, device=device, url=url, launch=launch)
    check_engine_options(engine, options)
    try:
        given = {"workers": workers, "max_request_tokens": max_request_tokens, "memory_budget_gb": memory_budget_gb}
        cfg = BenchConfig(scenario=scenario, engine=engine, model=model, overrides=overrides_from(flags),
                           engine_options=options, out_dir=out_dir, timeout_s=timeout_s, ray_address=ray,
                           server_hardware=served, **{k: v for k, v in given.items() if v is not None})
        worker_spec.check_here(cfg.workers, len(available_cpus()))  # before anything starts: a usage error
    except (BenchError, worker_spec.WorkersError) as e:
        fail(str(e))
    return cfg
