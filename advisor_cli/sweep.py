"""`advisor sweep`: rising rates (or users) on one engine until the SLOs break; the capacity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from advisor.run_config import SweepConfig
from advisor_cli.options import default, engine_flags, repeat_flags, run_flags, scenario_flags


def _numbers(text: str | None, flag: str, conv: type) -> tuple | None:
    if not text:
        return None
    try:
        return tuple(conv(x) for x in text.split(",") if x.strip())
    except ValueError:
        example = "0.5,1,2,4" if conv is float else "1,2,4,8"
        raise click.UsageError(f"{flag} expects comma-separated numbers, e.g. {example}; got {text!r}") from None


def step_line(p: Any) -> str:
    """One sweep step as the console says it: load, pass or why not, achieved rate, run id."""
    return (f"{p.label()}: {'pass' if p.passes else 'FAIL: ' + p.failure()} "
            f"(achieved {p.achieved_rps:.2f} req/s, run {p.run_id})")


def _given(*params: str) -> list[str]:
    """Which of these flags were given (not defaults), by their flag names."""
    ctx = click.get_current_context()
    return [p.replace("_", "-") for p in params
            if ctx.get_parameter_source(p) not in (None, click.core.ParameterSource.DEFAULT)]


@click.command("sweep")
@scenario_flags(skip=("rate_rps", "concurrency"))
@engine_flags
@run_flags
@repeat_flags
@click.option("--rates", default=None, help="Comma-separated request rates, e.g. 0.5,1,2,4.")
@click.option("--concurrencies", default=None, help="Comma-separated closed-loop users, e.g. 1,2,4,8 "
              "(closed-loop scenarios: capacity in concurrent users).")
@click.option("--start", "start_rps", type=float, default=default(SweepConfig, "start_rps"), show_default=True,
              help="First rate (req/s).")
@click.option("--factor", type=float, default=default(SweepConfig, "factor"), show_default=True,
              help="Rate multiplier per step.")
@click.option("--max-steps", type=int, default=default(SweepConfig, "max_steps"), show_default=True)
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
    from advisor.bench import open_engine, plan
    from advisor.sweep import SweepError, check_unlocked, load_sweep, resume_config, run_sweep
    from advisor_cli.options import bench_config

    resumed = None
    try:
        if resume_id:
            given = [name for name, v in (("scenario", flags.get("scenario")), ("rates", rates),
                                          ("concurrencies", concurrencies)) if v] + _given("workers", "repeats",
                                                                                          "restart_engine")
            if given:
                raise click.UsageError(f"--resume takes every setting from the saved sweep; drop --{given[0]}")
            resumed = load_sweep(resume_id, flags["out_dir"])
            cfg = resume_config(resumed, flags["out_dir"])
            check_unlocked(Path(flags["out_dir"]) / resumed.sweep_id)  # before an engine starts
            if flags.get("ray"):  # where the Ray cluster is now is not part of the sweep's plan
                from dataclasses import replace

                try:
                    cfg = replace(cfg, bench=replace(cfg.bench, ray_address=flags["ray"]))
                except ValueError as e:  # --ray for a sweep that does not run on Ray
                    raise click.UsageError(str(e)) from None
        else:
            cfg = SweepConfig(bench_config(**flags), rates=_numbers(rates, "--rates", float),
                              concurrencies=_numbers(concurrencies, "--concurrencies", int), start_rps=start_rps,
                              factor=factor, max_steps=max_steps, repeats=repeats, restart_engine=restart_engine)
        first = plan(cfg.step_config(cfg.load_plan()[0]))  # scenario, options, out dir: all checked now
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
        from advisor.capacity import capacity_text

        cap = res.capacity
        click.echo(f"capacity: {capacity_text(cap.capacity_rps, cap.capacity_users)} - {cap.reason}")
        click.echo(f"stopped: {res.stop_reason}; saved {res.path}")
