"""Flags shared by the commands, declared once (bench/sweep/matrix, recommend/hardware), and their conversion.

`engine_flags`, `scenario_flags` and `run_flags` are decorators; a command that
takes them receives the values as keyword arguments and turns them into a
`BenchConfig` with `bench_config(...)`. The scenario flags' names come from
`scenarios.overrides.FLAGS` (the one flag-name map). A flag that fills a config
field is made from that field (`option(BenchConfig, "timeout_s")`): its name,
type, default and help are the ones `advisor.run.config` declares, and its value
is checked once, there (`--workers` is parsed by `BenchConfig`).
A zero that means something is kept (`--warmup 0`); a bad value is a usage
error naming the flag and the valid range, raised before anything runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, get_type_hints

import click

from advisor.run.config import BenchConfig, SweepConfig, bounds, default, extra_of
from advisor_cli.server_hardware import server_hardware_flags, server_hardware_from
from scenarios.overrides import FLAGS, Overrides


def fail(message: str) -> NoReturn:
    raise click.UsageError(message)


def option(config: Any, name: str, **click_kwargs: Any) -> Callable[[Any], Any]:
    """The flag of a config field, made from its declaration: flag name, type, default, help (its description,
    with `{default}` and its bounds filled in). The default is shown unless the help text states it."""
    info = config.__pydantic_fields__[name]
    extra = extra_of(info)
    value = default(config, name) if not info.is_required() else None
    text = info.description or None
    types = set(getattr(info.annotation, "__args__", None) or (info.annotation,)) - {type(None)}
    kind = types.pop() if len(types) == 1 else None  # int, float, bool; a union (--workers) is read as text
    kwargs: dict[str, Any] = {
        "type": kind if kind in (int, float) else None, "is_flag": kind is bool or None, "default": value,
        "metavar": extra.get("metavar"), "help": text.format(default=value, **bounds(info)) if text else None,
        "show_default": value is not None and value is not False and "{default" not in (text or "")}
    decls = [extra["flag"], *([extra["short"]] if "short" in extra else []), name]
    return click.option(*decls, **{**kwargs, **click_kwargs})


def int_range(config: Any, name: str) -> click.IntRange:
    """A whole-number field's declared range as click's: the flag refuses a value outside it while parsing."""
    b = bounds(config.__pydantic_fields__[name])
    return click.IntRange(b.get("ge"), b.get("le"))


RUNS: Path = default(BenchConfig, "out_dir")  # the runs store: --out of bench/sweep/matrix, --runs of the readers


def _stack(options: list[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def deco(f: Any) -> Any:
        for o in reversed(options):
            f = o(f)
        return f
    return deco


def _override_flag(f: dataclasses.Field[Any], typ: Any) -> Callable[[Any], Any]:
    """The flag of an `Overrides` field: its name from FLAGS, its type and help (`metadata["help"]`) from the field."""
    if typ is bool:
        return click.option("--" + f.name.replace("_", "-"), f.name, is_flag=True, help=f.metadata["help"])
    kind = next(t for t in typ.__args__ if t is not type(None))  # `float | None`: None is "not given"
    return click.option(FLAGS[f.name], f.name, type=kind, default=None, help=f.metadata["help"])


def scenario_flags(*, skip: tuple[str, ...] = ()) -> Callable[[Any], Any]:
    """--scenario and the overrides that fit it to a machine (`skip`: fields a command sets itself), made from
    `Overrides`' fields in the order of FLAGS, --full-scale last."""
    declared, hints = {f.name: f for f in dataclasses.fields(Overrides)}, get_type_hints(Overrides)
    names = [n for n in (*FLAGS, *declared) if n not in skip and "help" in declared[n].metadata]
    return _stack([option(BenchConfig, "scenario"),
                   *(_override_flag(declared[n], hints[n]) for n in dict.fromkeys(names))])


engine_flags = _stack([
    option(BenchConfig, "engine"),
    option(BenchConfig, "model"),
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
    option(SweepConfig, "repeats", type=int_range(SweepConfig, "repeats")),
    option(SweepConfig, "restart_engine"),
])

def out_folder(value: Path | str) -> Path:
    """--out as given: an empty one would save into the current folder, so it is refused."""
    if not str(value).strip() or str(value) in (".", "./"):
        raise click.BadParameter("give a folder for the runs (an empty --out would save into the current folder); "
                                 f"the default is {RUNS}", param_hint="--out")
    return Path(value)


def flag_fields(config: Any, skip: tuple[str, ...] = ("scenario", "engine", "model")) -> list[str]:
    """The fields of `config` that declare a flag, in declaration order (`skip`: those another group makes)."""
    return [name for name, info in config.__pydantic_fields__.items() if "flag" in extra_of(info) and name not in skip]


def config_flags(config: Any, names: list[str]) -> list[Callable[[Any], Any]]:
    """The flags of these fields of `config` (--out is also checked as a folder here)."""
    made = {"out_dir": {"type": click.Path(file_okay=False, path_type=Path), "callback": lambda c, p, v: out_folder(v)}}
    return [option(config, name, **made.get(name, {})) for name in names]


json_flag = click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")


def run_flags_of(config: Any) -> Callable[[Any], Any]:
    """Every flag `config` declares beyond the scenario and engine groups (--out, --timeout, --workers, --ray,
    --max-request-tokens, --memory-budget, and any field added with a flag), --json after the load generators'."""
    names = flag_fields(config)
    at = names.index("ray_address") + 1
    return _stack([*config_flags(config, names[:at]), json_flag, *config_flags(config, names[at:])])


run_flags = run_flags_of(BenchConfig)


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
    given = {f.name for f in dataclasses.fields(Overrides)}
    kwargs = {k: v for k, v in flags.items() if k in given and v is not None and v is not False}
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
        command = "rag" if sc.workload.task == "rag" else "embed"
        fail(f"scenario '{sc.name}' is an {sc.workload.task} scenario: run it with `advisor {command} --scenario {scenario}`")


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
                 timeout_s: float, workers: str | int | None = None, ray_address: str | None = None,
                 max_request_tokens: int | None = None, memory_budget_gb: float | None = None, server_hardware: str | None = None,
                 server_hardware_count: int = 1, server_where: str | None = None, server_metrics: str | None = None,
                 **flags: Any) -> Any:
    """The BenchConfig the shared flags describe; every problem is a usage error before anything starts.

    A flag left at None (a caller without it) takes BenchConfig's own default; BenchConfig checks every
    value once (`--workers` included) and its BenchError becomes the usage error.
    """
    from adapters.placement import available_cpus
    from advisor.loadgen import worker_spec
    from advisor.run.config import BenchError

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
                           engine_options=options, out_dir=out_dir, timeout_s=timeout_s, ray_address=ray_address,
                           server_hardware=served, **{k: v for k, v in given.items() if v is not None})
        worker_spec.check_here(cfg.workers, len(available_cpus()))  # before anything starts: a usage error
    except (BenchError, worker_spec.WorkersError) as e:
        fail(str(e))
    return cfg
