"""`advisor embed`: benchmark an embedding or rerank engine on its scenario (latency, inputs/s, tokens/s, padding waste,
engine memory, goodput, cost)."""

from __future__ import annotations

import json
import sys

import click

from adapters.embedders import EMBED_REGISTRY


def _opts(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--opt {p!r}: give KEY=VALUE")
        out[key] = value
    return out


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


@click.command("embed")
@click.option("--scenario", "-s", default="embed-query", show_default=True,
              help="embed or rerank scenario: embed-query, embed-ingest, rerank, or a YAML file with `task: embed` "
                   "or `task: rerank`")
@click.option("--engine", "-e", default="sentence-transformers", show_default=True,
              help=f"embedding or rerank engine: {', '.join(EMBED_REGISTRY)} (onnxruntime-embed and "
                   "openvino-embed take --opt precision=int8)")
@click.option("--model", "-m", default=None, help="embedding model folder or cached name (e.g. minilm)")
@click.option("--url", default=None, help="server address for openai-embed, e.g. http://127.0.0.1:7997")
@click.option("--threads", default=None, type=click.IntRange(1, 1024), help="engine threads")
@click.option("--opt", "opts", multiple=True, help="engine option KEY=VALUE (repeatable)")
@click.option("--rate", type=float, default=None, help="mean request rate, req/s")
@click.option("--duration", type=float, default=None, help="measurement window, s")
@click.option("--warmup", type=float, default=None, help="warm-up before the window, s")
@click.option("--max-requests", type=click.IntRange(1), default=None, help="cap on scheduled requests")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True)
@click.option("--full-scale", is_flag=True, help="ignore the scenario's small-machine `fit` block")
@click.option("--price-usd-per-hour", type=click.FloatRange(0, 1e6), default=None,
              help="the machine's price, for $ per 1M tokens embedded")
@click.option("--json", "as_json", is_flag=True, help="print result.json")
def embed_command(scenario: str, engine: str, model: str | None, url: str | None, threads: int | None,
                  opts: tuple[str, ...], rate: float | None, duration: float | None, warmup: float | None,
                  max_requests: int | None, seed: int, full_scale: bool, price_usd_per_hour: float | None,
                  as_json: bool) -> None:
    """Measure an embedding (or rerank) engine on an embed (or rerank) scenario; saved in runs-embed/<run-id>/."""
    from adapters import OptionsError
    from adapters.base import EngineUnavailable
    from advisor.embed.bench import EmbedInputError, run_embed
    from scenarios.errors import ScenarioError
    from scenarios.overrides import Overrides

    options: dict[str, object] = _opts(opts)
    if url is not None:
        options["url"] = url
    if threads is not None:
        options["threads"] = threads
    try:
        ov = Overrides(rate_rps=rate, duration_s=duration, warmup_s=warmup, max_requests=max_requests,
                       full_scale=full_scale)
        run = run_embed(scenario, engine, model, options, ov, seed, price_usd_per_hour)
    except (ScenarioError, EngineUnavailable, OptionsError, EmbedInputError, FileNotFoundError, ValueError) as e:
        raise click.UsageError(str(e)) from None
    if as_json:
        click.echo(json.dumps(run.to_dict(), indent=1, default=str))
        return
    s = run.summary
    lat = s.latency_ms
    click.echo(f"{run.scenario} on {run.engine.engine} {run.engine.version} ({run.engine.model}): {s.verdict}")
    click.echo(f"  latency ms p50 {fmt(lat.p50)}  p95 {fmt(lat.p95)}  p99 {fmt(lat.p99)}  (n={lat.n})")
    unit = "passages" if s.task == "rerank" else "inputs"
    click.echo(f"  requests/s {fmt(s.requests_per_s)}  {unit}/s {fmt(s.inputs_per_s)}  tokens/s {fmt(s.tokens_per_s)}"
               f"  goodput req/s {fmt(s.goodput_rps)}  SLO met {s.slo_met}")
    w = s.padding_waste
    click.echo(f"  padding waste p50 {pct(w.p50)}  p95 {pct(w.p95)}  run {pct(s.padding_waste_run)}" if w.n else
               "  padding waste not known (the engine does not say what it padded)")
    tele = run.telemetry
    if tele is not None and tele.rss_peak_mb is not None:
        click.echo(f"  engine memory (pid {tele.pid}) RSS peak {tele.rss_peak_mb:.0f} MiB, median "
                   f"{fmt(tele.rss_steady_mb and round(tele.rss_steady_mb))} MiB")
    elif tele is not None:
        click.echo(f"  engine memory not known ({tele.rss_absent_reason or 'no sample was taken'})")
    done = "reranked" if s.task == "rerank" else "embedded"
    if s.usd_per_million_inputs is not None:
        click.echo(f"  $ per 1M {unit} {done} {s.usd_per_million_inputs:.4g} at ${s.usd_per_hour:g}/h")
    if s.usd_per_million_tokens is not None:
        click.echo(f"  $ per 1M tokens {done} {s.usd_per_million_tokens:.4g} at ${s.usd_per_hour:g}/h")
    for r in s.reasons:
        click.echo(f"  {r}", err=True)
    click.echo(f"  saved: {run.path}")
    if run.interrupted_by is not None:
        from advisor.run.interrupts import Interrupted

        raise Interrupted(run.interrupted_by)  # exit 128 + the signal, as bench's partial runs do
    if s.verdict == "FAILED":
        sys.exit(1)
