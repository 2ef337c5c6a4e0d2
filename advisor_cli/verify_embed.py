"""`advisor verify` on an embedding model or a cross-encoder: each engine's drift from sentence-transformers fp32."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

OUT_ROOT = Path("runs-embed") / "verify"  # beside the embed runs


def embed_verify(model: str, threads: int | None, engines: tuple[str, ...], as_json: bool,
                 out_root: Path | None = OUT_ROOT) -> None:
    """Print (and save under `out_root`) the drift of every embedding variant, or those of `engines`."""
    from adapters.base import AdapterError, EngineUnavailable
    from advisor.embed import drift

    variants = tuple(v for v in drift.VARIANTS if not engines or v[0] in engines)
    if not variants:
        names = sorted({v[0] for v in drift.VARIANTS})
        raise click.UsageError(f"no embedding variants for engine(s) {', '.join(engines)}; choose from: "
                               f"{', '.join(names)}")
    try:
        report = drift.run_drift(model, variants, threads=threads)
    except (EngineUnavailable, AdapterError, FileNotFoundError) as e:
        raise click.UsageError(f"the reference (sentence-transformers fp32) could not run: {e}") from None
    doc = report.to_dict()
    saved = _save(doc, model, out_root)
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    click.echo(f"drift from {report.reference} on {report.model}: {report.results[0].n_chunks if report.results else 0} "
               f"corpus chunks of {report.chunk_words} words, recall@{drift.K} overlap over seeded corpus queries "
               f"(seed {report.seed})")
    click.echo(f"  {'engine':24s} {'precision':9s} {'status':6s} {'cos min':>10s} {'cos mean':>10s} "
               f"{'recall@10 mean':>15s} {'recall@10 min':>14s}")
    for r in report.results:
        click.echo(f"  {r.engine:24s} {r.precision:9s} {r.status:6s} {_fig(r.cosine_min, '.6f'):>10s} "
                   f"{_fig(r.cosine_mean, '.6f'):>10s} {_fig(r.recall_overlap_mean, '.3f'):>15s} "
                   f"{_fig(r.recall_overlap_min, '.3f'):>14s}")
        if r.error:
            click.echo(f"    {r.error}")
    if saved is not None:
        click.echo(f"  saved: {saved}")


def rerank_verify(model: str, threads: int | None, engines: tuple[str, ...], as_json: bool,
                  out_root: Path | None = OUT_ROOT) -> None:
    """Print (and save under `out_root`) the drift of every rerank variant, or those of `engines`."""
    from adapters.base import AdapterError, EngineUnavailable
    from advisor.embed import rerank_drift

    variants = tuple(v for v in rerank_drift.VARIANTS if not engines or v[0] in engines)
    if not variants:
        names = sorted({v[0] for v in rerank_drift.VARIANTS})
        raise click.UsageError(f"no rerank variants for engine(s) {', '.join(engines)}; --model {model} is a "
                               f"cross-encoder: choose from {', '.join(names)}")
    try:
        report = rerank_drift.run_rerank_drift(model, variants, threads=threads)
    except (EngineUnavailable, AdapterError, FileNotFoundError, ValueError) as e:
        raise click.UsageError(f"the reference (sentence-transformers-rerank fp32) could not run: {e}") from None
    doc = report.to_dict()
    saved = _save(doc, model, out_root)
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    k = rerank_drift.K
    click.echo(f"drift from {report.reference} on {report.model}: {len(report.results) and report.results[0].n_queries} "
               f"seeded corpus queries x {report.candidates} candidate passages of {report.passage_words} words, "
               f"top-{k} agreement and Kendall's tau-b of the scores (seed {report.seed})")
    click.echo(f"  {'engine':28s} {'precision':9s} {'status':6s} {f'top{k} mean':>10s} {f'top{k} min':>9s} "
               f"{'tau mean':>9s} {'tau min':>8s} {'max |d score|':>13s}")
    for r in report.results:
        click.echo(f"  {r.engine:28s} {r.precision:9s} {r.status:6s} {_fig(r.topk_overlap_mean, '.3f'):>10s} "
                   f"{_fig(r.topk_overlap_min, '.3f'):>9s} {_fig(r.kendall_tau_mean, '.4f'):>9s} "
                   f"{_fig(r.kendall_tau_min, '.4f'):>8s} {_fig(r.score_max_abs_diff, '.2e'):>13s}")
        if r.error:
            click.echo(f"    {r.error}")
    if saved is not None:
        click.echo(f"  saved: {saved}")


def _fig(x: float | None, spec: str) -> str:
    """A figure, or "-" when there is none."""
    return "-" if x is None else format(x, spec)


def _save(doc: dict[str, Any], model: str, out_root: Path | None) -> Path | None:
    if out_root is None:
        return None
    out_root.mkdir(parents=True, exist_ok=True)
    saved = out_root / f"{time.strftime('%Y%m%d-%H%M%S')}-{Path(model).name}.json"
    saved.write_text(json.dumps(doc, indent=1))
    return saved
