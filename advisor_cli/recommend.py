"""`advisor recommend`: engine x hardware x config ranked for your SLOs, load and budget, with why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from advisor_cli.options import RUNS, catalog_from_flags, price_flags


def _quality(path: Path | None) -> dict[str, float]:
    """`{"engine/precision" or "engine": drift | {"top1_agreement": x} | {"token_agreement": x}}` from a JSON file
    (`advisor verify --json` writes its `quality_drift` block so): drift = 1 - top-1 agreement on verify's text,
    else 1 - greedy token agreement. Anything else is a usage error naming the file and the key."""
    if path is None:
        return {}
    if path.is_dir():
        raise click.UsageError(f"quality file {path} is a folder; pass the JSON file written by `advisor verify --json`")
    if not path.is_file():
        raise click.UsageError(f"quality file {path} not found; pass the JSON written by `advisor verify`")
    try:
        d = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise click.UsageError(f"{path}: not valid JSON ({e})") from None
    entries = d.get("quality_drift", d) if isinstance(d, dict) else d
    where = "quality_drift" if isinstance(d, dict) and "quality_drift" in d else "the document"
    if not isinstance(entries, dict):
        raise click.UsageError(f"{path}: {where} must be an object of engine[/precision] to drift, e.g. "
                               '{"vllm/fp8": 0.02} or {"vllm/fp8": {"top1_agreement": 0.98}} (`advisor verify --json`)')
    prefix = "quality_drift." if where == "quality_drift" else ""
    out = {}
    for k, v in entries.items():
        if not isinstance(v, dict):
            out[k] = _fraction(v, path, f"{prefix}{k}")
            continue
        fig = next((f for f in ("top1_agreement", "token_agreement") if v.get(f) is not None), None)
        if fig is not None:  # top-1 on verify's text first; greedy token agreement when there was no tokenizer
            out[k] = 1.0 - _fraction(v[fig], path, f"{prefix}{k}.{fig}")
        elif not {"top1_agreement", "token_agreement"} & set(v):
            raise click.UsageError(f"{path}: {prefix}{k} has neither top1_agreement nor token_agreement; "
                                   "give one (0 to 1), or the drift itself as a number")
        # else both are null: verify compared nothing for that variant, so there is no figure to use
    return out


def _model_ask(model_config: str, precisions: tuple[str, ...], scenario: str | None) -> Any:
    """The model, precisions and scenario `--model-config` sizes, or a usage error naming the fix."""
    from advisor.recommend.model_config import ModelConfigAsk
    from advisor.sizing.architecture import load_architecture
    from advisor.sizing.errors import SizingError
    from scenarios.catalog import load_scenario
    from scenarios.errors import ScenarioError

    if scenario is None:
        raise click.UsageError("--model-config sizes for one traffic: give --scenario NAME (e.g. -s chat), or "
                               "`scenario:` in the constraints file")
    try:
        return ModelConfigAsk(load_architecture(model_config), tuple(dict.fromkeys(precisions)) or ("bf16", "fp8"),
                              load_scenario(scenario))
    except (SizingError, ScenarioError) as e:
        raise click.UsageError(str(e)) from None


def _fraction(v: Any, path: Path, key: str) -> float:
    """`v` as a number from 0 to 1, or a usage error naming the file and the key."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:  # NaN fails the range too
        raise click.UsageError(f"{path}: {key} is {v!r}; give a number from 0 to 1 (as `advisor verify --json` writes)")
    return float(v)


@click.command("recommend")
@click.option("--scenario", "-s", default=None, help="Only runs of this scenario.")
@click.option("--runs", "root", type=click.Path(path_type=Path), default=RUNS, show_default=True,
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
@click.option("--max-quality-drift", type=float, default=None,
              help="Max drift (0-1): share of positions whose top token differs from the fp32 reference on verify's "
                   "text (1 - top-1 agreement), else of greedy tokens that differ.")
@click.option("--quality", "quality_file", type=click.Path(path_type=Path), default=None,
              help="JSON of quality drift per engine[/precision] (from `advisor verify`).")
@click.option("--headroom", type=float, default=None,
              help="Spare capacity over the peak, as a fraction: 0.2 (the default) sizes for 20% more; 0 to 10.")
@click.option("--price-tier", type=click.Choice(["cloud_on_demand", "owned_tco"]), default=None)
@click.option("--no-estimates", is_flag=True, help="Only measured rows, no roofline estimates.")
@click.option("--allow-uncalibrated", is_flag=True, default=None,
              help="Let uncalibrated estimates be recommended: those carried from another device class (CPU runs to a "
                   "GPU) or from a single run (no backtest). No estimate rests on an assumed efficiency.")
@click.option("--tie-break", default=None, metavar="complexity,margin",
              help="Order of the criteria that break a tie between options whose cost ranges overlap.")
@click.option("--measure/--no-measure", default=True, help="Measure this machine's memory bandwidth for calibration "
              "(once per machine, then cached with its date).")
@click.option("--remeasure", is_flag=True, help="Measure the memory bandwidth again instead of using the cached one.")
@click.option("--model-config", "model_config", default=None, metavar="NAME|FILE",
              help="Size a model you have not run: a shipped name (advisor estimate --list) or an HF config.json. "
                   "Its rows are sized from operator tables; runs of the same shape are its measured rows.")
@click.option("--precision", "precisions", multiple=True, type=click.Choice(["bf16", "fp8", "fp4", "int4"]),
              help="With --model-config: precision to size (repeatable; default bf16 and fp8).")
@price_flags
@click.option("--task", type=click.Choice(["generate", "embed", "rerank", "rag"]), default="generate",
              show_default=True, help="What to rank: generation runs, or the embed, rerank or RAG pipeline runs "
                                      "saved by `advisor embed` / `advisor rag` (see --embed-runs).")
@click.option("--embed-runs", "embed_root", type=click.Path(path_type=Path), default=Path("runs-embed"),
              show_default=True, help="Folder of saved embed, rerank and rag runs (--task embed|rerank|rag).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
def recommend_command(scenario: str | None, root: Path, constraints_file: Path | None, quality_file: Path | None,
                      no_estimates: bool, tie_break: str | None, measure: bool, remeasure: bool, prices: Path | None,
                      price: tuple[str, ...], as_json: bool, model_config: str | None, precisions: tuple[str, ...],
                      task: str, embed_root: Path, **flags: Any) -> None:
    """Rank engine x hardware x config for your SLOs, load and budget, with why; measured and estimated."""
    if task != "generate":
        _recommend_retrieval(task, embed_root, scenario, as_json)
        return
    from advisor.hardware.detect import detect
    from advisor.metrics.slo_evidence import load_samples
    from advisor.recommend import Constraints, ConstraintsError, NoRunsError, recommend
    from advisor.recommend.render import print_recommendation
    from advisor.saved.store import readable_runs

    quality = _quality(quality_file)  # a bad file is refused before anything is measured
    ties = tuple(x.strip() for x in tie_break.split(",") if x.strip()) if tie_break else None
    try:
        base = Constraints.from_yaml(constraints_file) if constraints_file else Constraints()
        cons = base.merged(scenario=scenario, include_estimates=False if no_estimates else None, tie_break=ties,
                           **flags)
    except ConstraintsError as e:
        raise click.UsageError(str(e)) from None
    catalog = catalog_from_flags(prices, price)
    try:
        cons.check_vendors(catalog)
    except ConstraintsError as e:
        raise click.UsageError(str(e)) from None
    if precisions and model_config is None:
        raise click.UsageError("--precision sizes a --model-config; give --model-config NAME|FILE too")
    ask = _model_ask(model_config, precisions, cons.scenario) if model_config is not None else None
    if not root.is_dir() and ask is None:
        raise click.UsageError(f"no runs folder {root}; run `advisor bench` first or pass --runs DIR")
    saved = readable_runs(root, lambda line: click.echo(line, err=True)) if root.is_dir() else []
    try:
        rec = recommend(saved, cons, catalog, detected=detect(catalog, measure=measure, remeasure=remeasure),
                        quality=quality,
                        samples=load_samples(saved), model=ask)
    except NoRunsError as e:
        raise click.ClickException(f"{e} (looked in {root})") from None
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if measure and not as_json:
        from advisor.hardware.bandwidth_cache import lookup
        from advisor.run import manifest

        bw = lookup(manifest.collect()["hardware"])
        if bw is not None:
            click.echo(f"this machine's memory bandwidth: {bw.text()}", err=True)
    if as_json:
        click.echo(json.dumps(rec.to_dict(), default=str))
    else:
        print_recommendation(rec)


def _recommend_retrieval(task: str, root: Path, scenario: str | None, as_json: bool) -> None:
    """Embed, rerank or RAG runs ranked per scenario by their own unit (`advisor.recommend.retrieval`)."""
    from dataclasses import asdict

    from advisor.recommend.retrieval import NoRetrievalRuns, rank

    try:
        rankings = rank(load_runs_or_fail(root, task), task, scenario)
    except NoRetrievalRuns as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(json.dumps([asdict(r) for r in rankings], indent=1, default=str))
        return
    for r in rankings:
        click.echo(f"{task} runs of scenario {r.scenario}, ranked by: {r.ranked_by}")
        for i, o in enumerate(r.options, 1):
            figs = "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                             for k, v in o.figures.items() if v is not None)
            click.echo(f"  {i}. {o.engines}  SLO met {o.slo_met}  {figs}  [run {o.run_id}]")
        if not r.options:
            click.echo("  no VALID run to recommend")
        for o in r.excluded:
            click.echo(f"  excluded: {o.engines} [run {o.run_id}]: {o.reason}")


def load_runs_or_fail(root: Path, task: str) -> list[Any]:
    from advisor.recommend.retrieval import load_runs

    if not root.is_dir():
        raise click.UsageError(f"--embed-runs {root} is not a folder of saved runs; measure one with "
                               f"`advisor {'rag' if task == 'rag' else 'embed'}` or point --embed-runs at one")
    return load_runs(root, task)
