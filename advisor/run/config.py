"""What a run and a sweep are asked to do: `BenchConfig` and `SweepConfig`, each setting declared once.

Each field declares its type, default, valid range (pydantic `Field` constraints), its help text (the
description) and, where the command line sets it, its flag (`json_schema_extra["flag"]`). From these
`advisor_cli.options` builds the shared flags and a bad value is refused here, once, in one line that names
the flag and the valid range (`BenchError`, `SweepError`; `_refusal` turns pydantic's report into that line).
They are pydantic dataclasses, frozen, so `dataclasses.replace` makes a checked copy. Its own light file so
that `advisor --help` imports no engine, event loop or store code to show a default (`advisor.run.bench` and
`advisor.sweep.run` import them from here).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, InstanceOf, PlainSerializer, TypeAdapter, ValidationError, model_validator
from pydantic.dataclasses import dataclass
from pydantic.fields import FieldInfo

from adapters import BUILTIN_ENGINE
from advisor.loadgen import stall, worker_spec
from advisor.loadgen.worker_spec import Workers
from scenarios.overrides import Overrides
from scenarios.prompts import MAX_PROMPT_TOKENS

# Memory bounds (docs/metrics.md, "Memory bounds"): the longest request (prompt + output) advisor builds when the
# engine states no context length; --max-request-tokens raises it up to scenarios.prompts.MAX_PROMPT_TOKENS.
DEFAULT_MAX_REQUEST_TOKENS = 1_048_576
MAX_STEPS = 50  # steps of one sweep
MAX_REPEATS = 100  # runs of one cell (`--repeats`: bench, and per step of a sweep)


class BenchError(ValueError):
    """A benchmark that cannot run as asked; the message says what to change."""


class SweepError(ValueError):
    """A sweep that cannot run or be read; the message names the fix."""


def _refusing(error: type[ValueError]) -> Any:
    """Construction (and so `dataclasses.replace`) raises `error` with one line naming the flag, not pydantic's report."""
    def wrap(cls: Any) -> Any:
        init, names = cls.__init__, [f.name for f in dataclasses.fields(cls)]

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as e:
                raise error(_refusal(cls, e, {**dict(zip(names, args)), **kwargs})) from None
        cls.__init__ = __init__
        return cls
    return wrap


def _refusal(cls: Any, e: ValidationError, given: dict[str, Any]) -> str:
    """The first problem as `--flag must be <its range>, got <the value given>`; a check's own words as they are."""
    err = e.errors(include_url=False)[0]
    if isinstance(err.get("ctx", {}).get("error"), Exception):  # a validator's own message already names the flag
        return str(err["ctx"]["error"])
    name = str(err["loc"][0]) if err["loc"] else ""
    info = cls.__pydantic_fields__.get(name)
    if info is None:
        return f"{name or cls.__name__}: {err['msg']}"
    extra = extra_of(info)
    flag, value = extra.get("flag", name), given.get(name, err["input"])
    rule = extra.get("rule") or _rule(info)
    if rule is None:
        return f"{flag}: {err['msg'][:1].lower()}{err['msg'][1:]}, got {value!r}"
    rule += f" ({extra['why']})" if "why" in extra else ""
    example = f", e.g. {extra['example']};" if "example" in extra else ","
    return f"{flag} must be {rule}{example} got {value!r}"


def extra_of(info: FieldInfo) -> dict[str, Any]:
    """A field's declared extras: `flag` (its command-line flag), `short`, `metavar`, `unit`, `why`, `rule`."""
    extra = info.json_schema_extra
    return dict(extra) if isinstance(extra, dict) else {}


def bounds(info: FieldInfo) -> dict[str, Any]:
    """A field's declared range, e.g. {"ge": 1, "le": 100}."""
    return {key: getattr(m, key) for m in info.metadata for key in ("gt", "ge", "le")
            if getattr(m, key, None) is not None}


def _rule(info: FieldInfo) -> str | None:
    """The valid range in words, from the field's type and constraints (a number's only; None for other types)."""
    b, types = bounds(info), {info.annotation, *getattr(info.annotation, "__args__", ())}
    if bool in types:
        return "true or false"
    if int in types and "ge" in b:
        return f"a whole number from {b['ge']:,} to {b['le']:,}" if "le" in b else f"a whole number >= {b['ge']}"
    if float in types and "gt" in b:
        unit = extra_of(info).get("unit")
        return f"a finite number{' of ' + unit if unit else ''} > {b['gt']:g}"
    return None


def _workers(value: object) -> Workers:
    return worker_spec.parse(value)  # its WorkersError (a ValueError) names --workers and the three spellings


def _overrides(value: object) -> object:
    return Overrides(**value) if isinstance(value, dict) else value  # a saved sweep's `overrides`




def _seconds(default: float | None) -> Any:
    """A duration that is not a flag: a finite number of seconds > 0."""
    return Field(default, gt=0, allow_inf_nan=False, strict=True, json_schema_extra={"unit": "seconds"})


@_refusing(BenchError)
@dataclass(frozen=True)
class BenchConfig:
    scenario: str = Field(description="Scenario name (see `advisor scenarios`) or a path to a YAML file.",
                          json_schema_extra={"flag": "--scenario", "short": "-s"})
    engine: str = Field(BUILTIN_ENGINE, description="Engine adapter (see `advisor engines`).",
                        json_schema_extra={"flag": "--engine", "short": "-e"})
    model: str | None = Field(None, description="Model folder or name in the model cache; default: the built-in "
                              "tiny model.", json_schema_extra={"flag": "--model", "short": "-m"})
    overrides: Annotated[InstanceOf[Overrides], BeforeValidator(_overrides),
                         PlainSerializer(lambda o: o.as_dict())] = Field(default_factory=Overrides)
    engine_options: dict[str, Any] = Field(default_factory=dict)
    out_dir: Path = Field(Path("runs"), description="Folder for saved runs.", json_schema_extra={"flag": "--out"})
    timeout_s: float = Field(600.0, gt=0, allow_inf_nan=False, strict=True, description="Per-request timeout (s).",
                             json_schema_extra={"flag": "--timeout", "unit": "seconds"})
    max_run_s: float | None = _seconds(None)  # whole run; None: the schedule's length plus drain time
    telemetry_interval_s: float = _seconds(1.0)
    workers: Annotated[Workers, BeforeValidator(_workers)] = Field(
        "auto", json_schema_extra={"flag": "--workers", "metavar": "N|auto|ray:N"},
        description="Load generators for a served engine (one schedule, sharded): N processes here, at most one "
                    "per CPU advisor may use (a worker beyond that only shares a CPU and costs an interpreter) "
                    "(auto: one while an open loop's peak rate is well within one process's measured capacity, "
                    "else one per CPU the client may use), or ray:N, N Ray actors spread over a cluster's nodes. "
                    "In-process engines keep one driver.")
    auto_workers_cap: int | None = Field(None, ge=1, strict=True)  # `auto` uses at most this many (a matrix cell's CPUs)
    ray_address: str | None = Field(None, json_schema_extra={"flag": "--ray", "metavar": "ADDRESS|auto"},
                                    description="With --workers ray:N: the Ray cluster (HOST:PORT, ray://HOST:10001 or "
                                                "auto; default auto: RAY_ADDRESS, a cluster running here, else a new "
                                                "local one).")
    max_request_tokens: int = Field(
        DEFAULT_MAX_REQUEST_TOKENS, ge=1, le=MAX_PROMPT_TOKENS, strict=True,
        json_schema_extra={"flag": "--max-request-tokens", "metavar": "N",
                           "why": "the most advisor holds in memory for one request"},
        description="Longest request (prompt + output tokens) to build when the engine states no context length "
                    "(default {default:,}; at most {le:,}). An engine's stated context always wins.")
    server_hardware: dict[str, Any] | None = None  # a served engine's hardware (`--server-hardware`), into the manifest
    memory_budget_gb: float | None = Field(
        None, gt=0, allow_inf_nan=False, strict=True,
        json_schema_extra={"flag": "--memory-budget", "metavar": "GB", "unit": "GB"},
        description="The most memory a run's plan may need (requests x their output tokens kept, prompts in "
                    "flight), checked before anything starts; default: half of this machine's memory.")
    stall_every_s: float = _seconds(stall.EVERY_S)  # requests open and nothing arriving this long: a line on stderr

    @model_validator(mode="after")
    def _ray_needs_ray_workers(self) -> BenchConfig:
        if self.ray_address is not None and worker_spec.on_ray(self.workers) is None:
            raise BenchError(f"--ray {self.ray_address}: the Ray cluster is for --workers ray:N; add it or drop --ray")
        return self


Rate = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
Users = Annotated[int, Field(ge=1, strict=True)]


@_refusing(SweepError)
@dataclass(frozen=True)
class SweepConfig:
    bench: InstanceOf[BenchConfig]  # engine, scenario, model, options and overrides of every step
    rates: Annotated[tuple[Rate, ...], Field(min_length=1)] | None = Field(  # explicit rates, else start x factor^i
        None, json_schema_extra={"flag": "--rates", "rule": "positive numbers", "example": "0.5,1,2,4"})
    concurrencies: Annotated[tuple[Users, ...], Field(min_length=1)] | None = Field(  # closed-loop users, not rates
        None, json_schema_extra={"flag": "--concurrencies", "rule": "whole numbers >= 1", "example": "1,2,4,8"})
    start_rps: float = Field(0.5, gt=0, allow_inf_nan=False, strict=True, description="First rate (req/s).",
                             json_schema_extra={"flag": "--start"})
    factor: float = Field(2.0, gt=1, allow_inf_nan=False, strict=True, description="Rate multiplier per step.",
                          json_schema_extra={"flag": "--factor"})
    max_steps: int = Field(6, ge=1, le=MAX_STEPS, strict=True, json_schema_extra={"flag": "--max-steps"})
    repeats: int = Field(1, ge=1, le=MAX_REPEATS, strict=True, json_schema_extra={"flag": "--repeats"},
                         description="Run the same cell N times: each an ordinary saved run, grouped, reported as "
                                     "median [interval] (docs/metrics.md, 'Repeats').")
    restart_engine: bool = Field(False, strict=True, json_schema_extra={"flag": "--restart-engine"},
                                 description="Start the engine afresh for every repeat (default: one engine serves "
                                             "every repeat).")

    @model_validator(mode="after")
    def _one_plan(self) -> SweepConfig:
        if self.rates is not None and self.concurrencies is not None:
            raise SweepError("give --rates or --concurrencies, not both")
        if len(self.load_plan()) > MAX_STEPS:
            raise SweepError(f"at most {MAX_STEPS} steps per sweep; got {len(self.load_plan())}")
        return self

    @property
    def unit(self) -> Literal["rps", "users"]:
        return "users" if self.concurrencies is not None else "rps"

    def load_plan(self) -> list[float]:
        if self.concurrencies is not None:
            return [float(c) for c in sorted(set(self.concurrencies))]
        if self.rates is not None:
            return sorted(set(self.rates))
        return [round(self.start_rps * self.factor ** i, 6) for i in range(self.max_steps)]

    def step_config(self, load: float) -> BenchConfig:
        ov = (dataclasses.replace(self.bench.overrides, concurrency=int(load)) if self.unit == "users"
              else dataclasses.replace(self.bench.overrides, rate_rps=load))
        return dataclasses.replace(self.bench, overrides=ov)

    def to_dict(self) -> dict[str, Any]:  # hand-written: a shape no field states (BenchConfig's saved fields, flat)
        """sweep.json's `config`: the settings a resumed sweep needs, flat, as the models serialise them."""
        bench = TypeAdapter(BenchConfig).dump_python(self.bench, mode="json")
        kept = {k: v for k, v in bench.items() if k in SAVED_BENCH_FIELDS
                or (k in SAVED_BENCH_FIELDS_WHEN_SET and getattr(self.bench, k) != default(BenchConfig, k))}
        return {**kept, **TypeAdapter(SweepConfig).dump_python(self, mode="json", exclude={"bench"})}

    @classmethod
    def from_dict(cls, d: dict[str, Any], out_dir: Path) -> SweepConfig:  # hand-written: the same flat shape
        """A saved sweep's settings (sweep.json's `config`), checked as when it started; a key an older file lacks
        takes its default, and `out_dir` is where the sweep is found now."""
        saved = (*SAVED_BENCH_FIELDS, *SAVED_BENCH_FIELDS_WHEN_SET)
        bench = BenchConfig(**{k: d[k] for k in saved if k in d and k != "out_dir"}, out_dir=out_dir)
        return cls(bench, **{k: d[k] for k in cls.__pydantic_fields__ if k != "bench" and k in d})


# The BenchConfig fields sweep.json keeps: the plan of every step. Not kept: where the Ray cluster is now (`--ray`
# is given again on --resume), and what the sweep sets itself per step (the load, in `overrides`). The second group
# is written only when it differs from the default, so a file is as an older advisor wrote it unless one was set.
SAVED_BENCH_FIELDS = ("scenario", "engine", "model", "overrides", "engine_options", "out_dir", "timeout_s", "workers")
SAVED_BENCH_FIELDS_WHEN_SET = ("max_request_tokens", "server_hardware", "memory_budget_gb")


def default(config: Any, name: str) -> Any:
    """The default a config declares for `name` (a fresh one where it declares a factory)."""
    info = config.__pydantic_fields__[name]
    return info.get_default(call_default_factory=True)
