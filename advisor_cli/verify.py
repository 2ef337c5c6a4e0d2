"""`advisor verify`: every engine and format variant against own_engine fp32, token by token and on text."""

from __future__ import annotations

import sys

import click


@click.command("verify")
@click.option("--model", default=None, help="model folder or cached name (default: the built-in tiny model)")
@click.option("--tokens", "n_tokens", default=32, show_default=True, type=click.IntRange(1, 4096),
              help="greedy tokens generated per prompt")
@click.option("--prompts", "n_prompts", default=3, show_default=True, type=click.IntRange(1, 64),
              help="prompts of random token ids (the same for every variant), 16, 19, 22... tokens long")
@click.option("--threads", default=None, type=click.IntRange(1, 1024), help="engine threads (default: engine's)")
@click.option("--engine", "engines", multiple=True, help="only these adapters (repeatable; default: all)")
@click.option("--no-text", is_flag=True, help="skip the teacher-forced scoring over the shipped text and the samples")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document (its `quality_drift` is what "
                                                         "`advisor recommend --quality FILE` reads)")
def verify_command(model: str | None, n_tokens: int, n_prompts: int, threads: int | None, engines: tuple[str, ...],
                   no_text: bool, as_json: bool) -> None:
    """Check that every engine/format variant computes the same function as own_engine fp32.

    On an embedding model: each embedding engine's drift from sentence-transformers fp32 on the shipped corpus
    (cosine per chunk, recall@10 overlap per query); on a cross-encoder, each rerank engine's top-10 agreement and
    Kendall's tau-b of the scores against the sentence-transformers CrossEncoder fp32 (docs/metrics.md)."""
    from advisor.quality.verify import all_variants, verify

    if model is not None and model.strip().lower().endswith(".gguf"):  # resolve_model would say "no such folder"
        raise click.UsageError(f"--model {model}: verify takes a model folder or a cached model name, not a GGUF "
                               "file; import it first with `advisor models import FILE.gguf` and pass the name it "
                               "prints")
    if model is not None and _task(model) in ("embed", "rerank"):
        from advisor_cli.verify_embed import embed_verify, rerank_verify

        (rerank_verify if _task(model) == "rerank" else embed_verify)(model, threads, engines, as_json)
        return
    every = all_variants()
    variants = tuple(v for v in every if not engines or v.adapter in engines)
    if not variants:
        names = sorted({v.adapter for v in every})
        raise click.ClickException(f"no variants for engine(s) {', '.join(engines)}; choose from: {', '.join(names)}")
    try:
        report = verify(model, n_tokens=n_tokens, n_prompts=n_prompts, threads=threads, variants=variants,
                        with_text=not no_text)
    except FileNotFoundError as e:
        raise click.ClickException(str(e)) from None
    if as_json:
        click.echo(report.to_json())
    else:
        _table(report)
    if not report.ok:
        bad = [f"{r.adapter} {r.format} {r.precision}" for r in report.results
               if r.status == "MISMATCH" or (r.status == "error" and r.precision == "fp32")]
        click.echo(f"variant(s) that must match own_engine fp32 do not: {', '.join(bad)}. A converter or engine "
                   "computes a different function; do not compare their speed until fixed.", err=True)
        sys.exit(1)


def _task(model: str) -> str | None:
    """The task of the model folder `model` names (embed, rerank, generate), None when it names none here."""
    from model_cache.model_task import model_task
    from model_cache.resolve import resolve_model

    try:
        return model_task(resolve_model(model))
    except (FileNotFoundError, ValueError):
        return None


def _table(report) -> None:
    """The table, one line a variant, then each distinct error or unavailability in full (cut, a fix was unreadable)."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"agreement with own_engine fp32 on {report.model} ({report.n_tokens} tokens x "
                    f"{len(report.prompts)} prompts)")
    for col in ("engine", "format", "precision", "status", "tokens agree", "first diverges", "max |dlogit|", "KL",
                "text agrees", "top-1 text", "KL text", "PPL"):
        t.add_column(col)
    notes: list[str] = []
    for r in report.results:
        fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
        if r.detail and r.detail not in notes:
            notes.append(r.detail)
        status = f"{r.status} [{notes.index(r.detail) + 1}]" if r.detail else r.status
        q = r.quality or {}
        t.add_row(r.adapter, r.format, r.precision, status,
                  fmt(r.token_agreement, ".0%"), "-" if r.first_divergence is None else str(r.first_divergence),
                  fmt(r.max_abs_diff, ".2g"), fmt(r.kl, ".2g"), fmt(r.text_agreement, ".0%"),
                  fmt(q.get("top1_agreement"), ".1%"), fmt(q.get("kl"), ".2g"), fmt(q.get("perplexity"), ".2f"))
    # piped (a file, a CI log, `| less`): rich would fit 80 columns and cut cells to "..."; 200 holds whole rows
    console = Console(file=sys.stdout, width=None if sys.stdout.isatty() else 200)
    console.print(t)
    if report.weights:
        console.print(f"weights: {report.weights}", markup=False, highlight=False, soft_wrap=True)
    if report.text_tokens:
        from advisor.quality.text_drift import TEXT_SOURCE
        from advisor.quality.verify import SAMPLE_PROMPT

        console.print(f"on text: teacher-forced over {report.text_tokens} tokens of {TEXT_SOURCE}, against own_engine "
                      "fp32 (docs/metrics.md); the recommender's quality drift is 1 - top-1 on text",
                      markup=False, highlight=False, soft_wrap=True)
        samples = [r for r in report.results if r.sample is not None]
        if samples:
            console.print(f"samples (greedy, {SAMPLE_PROMPT!r} ...):", markup=False, highlight=False)
            for r in samples:
                console.print(f"  {r.adapter} {r.precision}: {r.sample!r}", markup=False, highlight=False,
                              soft_wrap=True)
    for i, note in enumerate(notes, 1):
        console.print(f"[{i}] {note}", markup=False, highlight=False, soft_wrap=True)
