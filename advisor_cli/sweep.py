"""`advisor sweep`: rising rates (or users) on one engine until the SLOs break; the capacity."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from advisor.run.config import SweepConfig
from advisor_cli.options import engine_flags, option, repeat_flags, run_flags, scenario_flags


def _numbers(text: str | None, flag: str, conv: type) -> tuple | None:
    """A comma-separated list as given; None only when the flag was not given (an empty one is refused)."""
    if text is None:
        return None
    example = "0.5,1,2,4" if conv is float else "1,2,4,8"
    try:
        values = tuple(conv(x) for x in text.split(",") if x.strip())
    except ValueError:
        values = ()
    if not values:
        raise click.UsageError(f"{flag} expects comma-separated numbers, e.g. {example}; got {text!r}")
    return values


def step_line(p: Any) -> str:
    """One sweep step as the console says it: load, pass or why not, achieved rate, run id."""
    return (f"{p.label()}: {'pass' if p.passes else 'FAIL: ' + p.failure()} "
            f"(achieved {p.achieved_rps:.2f} req/s, run {p.run_id})")


# What `--resume` still takes: where the sweep is saved, where its Ray cluster is now, how to print the result.
_RESUME_TAKES = ("resume_id", "out_dir", "ray_address", "as_json")


def _given(*params: str) -> list[str]:
    """Which of these flags were given (not defaults), by their flag names, in the order of `--help`."""
    ctx = click.get_current_context()
    return [opt.opts[0] for opt in ctx.command.params if opt.name in params
            and ctx.get_parameter_source(opt.name) not in (None, click.core.ParameterSource.DEFAULT)]


def _refuse_ignored_flags(resuming: bool, rates: str | None, concurrencies: str | None) -> None:
    """A flag the sweep would not use is refused, never silently dropped."""
    params = [p.name for p in click.get_current_context().command.params if p.name]
    if resuming:
        given = _given(*(p for p in params if p not in _RESUME_TAKES))
        if given:
            raise click.UsageError(f"--resume takes every setting from the saved sweep; drop {', '.join(given)} "
                                   "(or start a new sweep to change them)")
        return
    steps = _given("start_rps", "factor", "max_steps")
    listed = "--rates" if rates is not None else "--concurrencies" if concurrencies is not None else None
    if listed and steps:
        raise click.UsageError(f"--start/--factor/--max-steps build the steps only without {listed} (which lists "
                               f"them itself); drop {', '.join(steps)}")


def _check_steps(cfg: SweepConfig) -> Any:
    """Plan every step (its load in range and fit for the scenario) before an engine starts; the first step's plan.

    A problem is named with sweep's own flags (--rates, --start, --concurrencies), never bench's.
    """
    from advisor.run.bench import plan
    from advisor.run.config import BenchError
    from scenarios.catalog import load_scenario
    from scenarios.overrides import MAX_RATE_RPS
    from scenarios.schedule import resolve

    loads = cfg.load_plan()
    rate_flag = "--rates" if cfg.rates is not None else "--start/--factor"
    if cfg.unit == "rps" and loads[-1] > MAX_RATE_RPS:
        if cfg.rates is not None:
            raise click.UsageError(f"--rates must each be at most {MAX_RATE_RPS:g} req/s, got {loads[-1]:g}")
        step = next(i for i, r in enumerate(loads) if r > MAX_RATE_RPS)
        raise click.UsageError(f"--start {cfg.start_rps:g} x --factor {cfg.factor:g} reaches {loads[step]:g} req/s "
                               f"at step {step + 1} of --max-steps {cfg.max_steps}; at most {MAX_RATE_RPS:g} req/s: "
                               "lower one of them")
    scenario = load_scenario(cfg.bench.scenario)
    mode = resolve(scenario, cfg.bench.overrides).mode
    if mode == "offline":
        raise click.UsageError(f"scenario '{scenario.name}' is offline (every request at t=0): there is no rate or "
                               "users to sweep; run it with `advisor bench`")
    if cfg.unit == "users" and mode != "closed":
        raise click.UsageError(f"--concurrencies applies only to closed-loop scenarios; '{scenario.name}' is "
                               "open-loop: sweep its rate with --rates, e.g. 0.5,1,2,4")
    if cfg.unit == "rps" and mode == "closed":
        asked = "--rates" if cfg.rates is not None else "a rate sweep (--start/--factor)"
        raise click.UsageError(f"{asked} does not apply to the closed-loop scenario '{scenario.name}': sweep its "
                               "users with --concurrencies, e.g. 1,2,4,8")
    first = None
    for load in loads:
        try:
            planned = plan(cfg.step_config(load))
        except ValueError as e:  # the scenario's or the run's own words name bench's --rate/--concurrency
            text = re.sub(r"--concurrency\b", "--concurrencies", re.sub(r"--rate\b", rate_flag, str(e)))
            if text == str(e):
                raise
            raise BenchError(text) from None
        first = planned if first is None else first
    return first


@click.command("sweep")
@scenario_flags(skip=("rate_rps", "concurrency"))
@engine_flags
@run_flags
@repeat_flags
@click.option("--rates", default=None, help="Comma-separated request rates, e.g. 0.5,1,2,4.")
@click.option("--concurrencies", default=None, help="Comma-separated closed-loop users, e.g. 1,2,4,8 "
              "(closed-loop scenarios: capacity in concurrent users).")
@option(SweepConfig, "start_rps")
@option(SweepConfig, "factor")
@option(SweepConfig, "max_steps")
@click.option("--resume", "resume_id", default=None, metavar="SWEEP_ID",
              help="Go on with an interrupted sweep (its saved settings; finished steps are not run again).")
def sweep_command(rates: str | None, concurrencies: str | None, start_rps: float, factor: float, max_steps: int,
                  resume_id: str | None, as_json: bool, repeats: int, restart_engine: bool, **flags: Any) -> None:
    """Rising request rates (or users) until the SLOs break: the highest passing step is the capacity.

    \b
    Examples:
      advisor sweep --scenario copilot --rates 1,2,4,8
      advisor sweep --scenario chat-closed --concurrencies 1,2,4,8
      advisor sweep --scenario copilot --rates 1,2,4 --repeats 3   # each step 3 times, grouped
      advisor sweep --resume 20261122-101500-sweep-copilot-own-3fa2c1
    """
    from advisor.run.bench import open_engine
    from advisor.sweep.run import SweepError, check_unlocked, load_sweep, resume_config, run_sweep
    from advisor_cli.options import bench_config

    resumed = None
    _refuse_ignored_flags(resume_id is not None, rates, concurrencies)
    try:
        if resume_id is not None:
            resumed = load_sweep(resume_id, flags["out_dir"])
            cfg = resume_config(resumed, flags["out_dir"])
            check_unlocked(Path(flags["out_dir"]) / resumed.sweep_id)  # before an engine starts
            if flags.get("ray_address"):  # where the Ray cluster is now is not part of the sweep's plan
                from dataclasses import replace

                try:
                    cfg = replace(cfg, bench=replace(cfg.bench, ray_address=flags["ray_address"]))
                except ValueError as e:  # --ray for a sweep that does not run on Ray
                    raise click.UsageError(str(e)) from None
        else:
            cfg = SweepConfig(bench_config(**flags), rates=_numbers(rates, "--rates", float),
                              concurrencies=_numbers(concurrencies, "--concurrencies", int), start_rps=start_rps,
                              factor=factor, max_steps=max_steps, repeats=repeats, restart_engine=restart_engine)
        first = _check_steps(cfg)  # every step's load, the scenario, options, out dir: all checked now
    except SweepError as e:
        raise click.UsageError(str(e)) from None

    def show(p: Any) -> None:
        if not as_json:
            click.echo(step_line(p))

    with open_engine(cfg.bench, first.options) as adapter:
        res = run_sweep(cfg, adapter, on_step=show, resume=resumed)
    if as_json:
        click.echo(json.dumps(res.to_dict(), default=str))
    else:
        from advisor.sweep.capacity import capacity_text

        cap = res.capacity
        click.echo(f"capacity: {capacity_text(cap.capacity_rps, cap.capacity_users)} - {cap.reason}")
        click.echo(f"stopped: {res.stop_reason}; saved {res.path}")
