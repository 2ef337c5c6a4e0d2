"""`advisor recommend`, `advisor sweep` and `advisor hardware` (the lead registers them in advisor/cli.py).

Every user error is a one-line click exception naming the fix; `--json` prints one JSON
document and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from advisor.cli_options import engine_flags, repeat_flags, run_flags, scenario_flags


def _catalog(prices: Path | None, price: tuple[str, ...]) -> Any:
    from advisor.catalog import CatalogError, load_catalog, parse_price_flags

    try:
        return load_catalog(prices, parse_price_flags(price))
    except CatalogError as e:
        raise click.UsageError(str(e)) from None


def _quality(path: Path | None) -> dict[str, float]:
    """`{"engine/precision" or "engine": drift | {"token_agreement": x}}` from a JSON file."""
    if path is None:
        return {}
    if not path.is_file():
        raise click.UsageError(f"quality file {path} not found; pass the JSON written by `advisor verify`")
    try:
        d = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise click.UsageError(f"{path}: not valid JSON ({e})") from None
    out = {}
    for k, v in (d.get("quality_drift", d) if isinstance(d, dict) else {}).items():
        if isinstance(v, dict) and "token_agreement" in v:
            out[k] = 1.0 - float(v["token_agreement"])
        elif isinstance(v, int | float):
            out[k] = float(v)
    return out


_price_options = [
    click.option("--prices", type=click.Path(path_type=Path), default=None,
                 help="YAML of price overrides: `prices: {h100-sxm: 2.10}` (a negotiated price wins)."),
    click.option("--price", multiple=True, metavar="ID=USD", help="Price override per device-hour (repeatable)."),
]


def _with(options: list[Any]) -> Any:
    def deco(f: Any) -> Any:
        for o in reversed(options):
            f = o(f)
        return f
    return deco


@click.command("recommend")
@click.option("--scenario", "-s", default=None, help="Only runs of this scenario.")
@click.option("--runs", "root", type=click.Path(path_type=Path), default=Path("runs"), show_default=True,
              help="Folder of saved runs.")
@click.option("--constraints", "constraints_file", type=click.Path(path_type=Path), default=None,
              help="Constraints YAML (flags win over it).")
@click.option("--peak-rps", type=float, default=None, help="Peak request rate to size replicas for.")
@click.option("--avg-rps", type=float, default=None, help="Average request rate.")
@click.option("--monthly-tokens-m", type=float, default=None, help="Monthly volume in millions of tokens.")
@click.option("--p95-ttft-ms", "ttft_ms", type=float, default=None, help="TTFT limit at the percentile.")
@click.option("--p95-tpot-ms", "tpot_ms", type=float, default=None, help="TPOT limit at the percentile.")
@click.option("--p95-e2e-ms", "e2e_ms", type=float, default=None, help="End-to-end latency limit.")
@click.option("--budget-usd-month", type=float, default=None, help="Monthly budget in USD.")
@click.option("--hardware", multiple=True, help="Allowed catalog hardware id (repeatable; see `advisor hardware`).")
@click.option("--vendor", "vendors", multiple=True, help="Allowed vendor (repeatable): nvidia, amd, intel.")
@click.option("--cpu-only", is_flag=True, default=None, help="Only CPU hardware.")
@click.option("--deployment", type=click.Choice(["any", "cloud", "on-prem", "edge"]), default=None)
@click.option("--max-complexity", type=click.Choice(["low", "medium", "high"]), default=None,
              help="Highest operational complexity the team accepts.")
@click.option("--max-quality-drift", type=float, default=None, help="Max fraction of tokens that may differ (0-1).")
@click.option("--quality", "quality_file", type=click.Path(path_type=Path), default=None,
              help="JSON of quality drift per engine[/precision] (from `advisor verify`).")
@click.option("--headroom", type=float, default=None, help="Spare capacity over peak (default 0.2).")
@click.option("--price-tier", type=click.Choice(["cloud_on_demand", "owned_tco"]), default=None)
@click.option("--no-estimates", is_flag=True, help="Only measured rows, no roofline estimates.")
@click.option("--allow-uncalibrated", is_flag=True, default=None,
              help="Let estimates calibrated on another device class (CPU runs carried to a GPU) be recommended.")
@click.option("--tie-break", default=None, metavar="complexity,margin",
              help="Order of the criteria that break a tie between options whose cost ranges overlap.")
@click.option("--measure/--no-measure", default=True, help="Measure this machine's memory bandwidth for calibration.")
@_with(_price_options)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
def recommend_command(scenario: str | None, root: Path, constraints_file: Path | None, quality_file: Path | None,
                      no_estimates: bool, tie_break: str | None, measure: bool, prices: Path | None,
                      price: tuple[str, ...], as_json: bool, **flags: Any) -> None:
    """Rank engine x hardware x config for your SLOs, load and budget, with why; measured and estimated."""
    from advisor.hardware_detect import detect
    from advisor.recommend import Constraints, ConstraintsError, NoRunsError, recommend
    from advisor.recommend.render import print_recommendation
    from advisor.slo_evidence import load_samples
    from advisor.store import readable_runs

    ties = tuple(x.strip() for x in tie_break.split(",") if x.strip()) if tie_break else None
    try:
        base = Constraints.from_yaml(constraints_file) if constraints_file else Constraints()
        cons = base.merged(scenario=scenario, include_estimates=False if no_estimates else None, tie_break=ties,
                           **flags)
    except ConstraintsError as e:
        raise click.UsageError(str(e)) from None
    catalog = _catalog(prices, price)
    if not root.is_dir():
        raise click.UsageError(f"no runs folder {root}; run `advisor bench` first or pass --runs DIR")
    saved = readable_runs(root, lambda line: click.echo(line, err=True))
    runs = [r.to_dict() for r in saved]
    try:
        rec = recommend(runs, cons, catalog, detected=detect(catalog, measure=measure), quality=_quality(quality_file),
                        samples=load_samples(saved))
    except NoRunsError as e:
        raise click.ClickException(f"{e} (looked in {root})") from None
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(json.dumps(rec.to_dict(), default=str))
    else:
        print_recommendation(rec)


@click.command("hardware")
@click.option("--measure/--no-measure", default=True, help="Measure this machine's memory bandwidth.")
@click.option("--price-tier", type=click.Choice(["cloud_on_demand", "owned_tco"]), default="cloud_on_demand")
@_with(_price_options)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
def hardware_command(measure: bool, price_tier: str, prices: Path | None, price: tuple[str, ...], as_json: bool) -> None:
    """List the hardware catalog (specs, prices, sources) and which entry this machine is."""
    from advisor.hardware_detect import detect
    from advisor.recommend.render import print_hardware

    catalog = _catalog(prices, price)
    det = detect(catalog, measure=measure).to_dict()
    if as_json:
        click.echo(json.dumps({"catalog": [h.model_dump() for h in catalog.hardware.values()],
                               "prices": {h: (p.to_dict() if (p := catalog.price(h, price_tier)) else None)
                                          for h in catalog.hardware},
                               "hosted": [o.model_dump() for o in catalog.hosted], "detected": det}, default=str))
    else:
        print_hardware(catalog, det, price_tier)


def _numbers(text: str | None, flag: str, conv: type) -> tuple | None:
    if not text:
        return None
    try:
        return tuple(conv(x) for x in text.split(",") if x.strip())
    except ValueError:
        example = "0.5,1,2,4" if conv is float else "1,2,4,8"
        raise click.UsageError(f"{flag} expects comma-separated numbers, e.g. {example}; got {text!r}") from None


@click.command("sweep")
@scenario_flags(skip=("rate_rps", "concurrency"))
@engine_flags
@run_flags
@repeat_flags
@click.option("--rates", default=None, help="Comma-separated request rates, e.g. 0.5,1,2,4.")
@click.option("--concurrencies", default=None, help="Comma-separated closed-loop users, e.g. 1,2,4,8 "
              "(closed-loop scenarios: capacity in concurrent users).")
@click.option("--start", "start_rps", type=float, default=0.5, show_default=True, help="First rate (req/s).")
@click.option("--factor", type=float, default=2.0, show_default=True, help="Rate multiplier per step.")
@click.option("--max-steps", type=int, default=6, show_default=True)
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
    from advisor.cli_options import bench_config
    from advisor.sweep import SweepConfig, SweepError, load_sweep, resume_config, run_sweep

    resumed = None
    try:
        if resume_id:
            given = [name for name, v in (("scenario", flags.get("scenario")), ("rates", rates),
                                          ("concurrencies", concurrencies)) if v]
            if given:
                raise click.UsageError(f"--resume takes every setting from the saved sweep; drop --{given[0]}")
            resumed = load_sweep(resume_id, flags["out_dir"])
            cfg = resume_config(resumed, flags["out_dir"])
        else:
            cfg = SweepConfig(bench_config(**flags), rates=_numbers(rates, "--rates", float),
                              concurrencies=_numbers(concurrencies, "--concurrencies", int), start_rps=start_rps,
                              factor=factor, max_steps=max_steps, repeats=repeats, restart_engine=restart_engine)
        first = plan(cfg.step_config(cfg.load_plan()[0]))  # scenario, options, out dir: all checked now
    except SweepError as e:
        raise click.UsageError(str(e)) from None

    def show(p: Any) -> None:
        if not as_json:
            click.echo(f"{p.label()}: {'pass' if p.passes else 'FAIL: ' + p.failure()} "
                       f"(achieved {p.achieved_rps:.2f} req/s, run {p.run_id})")

    with open_engine(cfg.bench, first.options) as adapter:
        res = run_sweep(cfg, adapter, on_step=show, resume=resumed)
    if as_json:
        click.echo(json.dumps(res.to_dict(), default=str))
    else:
        cap = res.capacity
        if cap.capacity_users is not None:
            what = f"{cap.capacity_users} users ({cap.capacity_rps:.2f} req/s)"
        else:
            what = "none" if cap.capacity_rps is None else f"{cap.capacity_rps:g} req/s"
        click.echo(f"capacity: {what} - {cap.reason}")
        click.echo(f"stopped: {res.stop_reason}; saved {res.path}")
