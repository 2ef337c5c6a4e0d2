"""Click commands `advisor models convert` and `advisor verify` (attached to the main CLI by advisor.cli).

`convert_command` prints progress to stderr and the path it wrote as the last
stdout line, so scripts can do `path=$(advisor models convert tiny --to gguf)`.
`verify_command` prints a table, or one JSON document with `--json`, and
exits 1 when an fp32 variant (or an fp16 one computed in fp32) disagrees
with own_engine.
"""

from __future__ import annotations

import sys

import click

from adapters.formats import FORMATS


@click.command("convert")
@click.argument("model")
@click.option("--to", "fmt", type=click.Choice(FORMATS), required=True, help="target format")
@click.option("--precision", "precisions", multiple=True, default=("fp32",), show_default=True,
              help="fp32|fp16|int8|int4|q8_0|q4_0 (repeatable; valid set depends on the format)")
@click.option("--force", is_flag=True, help="reconvert even if a cached conversion is up to date")
@click.option("--no-check", is_flag=True, help="skip the logit check against own_engine fp32")
def convert_command(model: str, fmt: str, precisions: tuple[str, ...], force: bool, no_check: bool) -> None:
    """Convert MODEL (a folder or a cached model name) to GGUF, ONNX or OpenVINO IR, cached next to the model."""
    from adapters.formats import ConversionError, convert, read_manifest
    from own_engine.paths import resolve_model

    try:
        src = resolve_model(model)
    except FileNotFoundError as e:
        raise click.ClickException(str(e)) from None
    for precision in precisions:
        try:
            out = convert(src, fmt, precision, force=force, check=not no_check)  # type: ignore[arg-type]
        except ConversionError as e:
            raise click.ClickException(str(e)) from None
        check = (read_manifest(out) or {}).get("check")
        if check:
            click.echo(f"{fmt} {precision}: logits vs own_engine fp32: max abs diff {check['max_abs_diff']:.3g}, "
                       f"KL {check['kl']:.3g}, top-1 agreement {check['argmax_agreement']:.0%}", err=True)
        click.echo(str(out))


@click.command("verify")
@click.option("--model", default=None, help="model folder or cached name (default: the built-in tiny model)")
@click.option("--tokens", "n_tokens", default=32, show_default=True, type=click.IntRange(1, 4096),
              help="greedy tokens generated per prompt")
@click.option("--prompts", "n_prompts", default=3, show_default=True, type=click.IntRange(1, 64))
@click.option("--threads", default=None, type=click.IntRange(1, 1024), help="engine threads (default: engine's)")
@click.option("--engine", "engines", multiple=True, help="only these adapters (repeatable; default: all)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def verify_command(model: str | None, n_tokens: int, n_prompts: int, threads: int | None, engines: tuple[str, ...],
                   as_json: bool) -> None:
    """Check that every engine/format variant computes the same function as own_engine fp32."""
    from advisor.verify import VARIANTS, verify

    variants = tuple(v for v in VARIANTS if not engines or v.adapter in engines)
    if not variants:
        names = sorted({v.adapter for v in VARIANTS})
        raise click.ClickException(f"no variants for engine(s) {', '.join(engines)}; choose from: {', '.join(names)}")
    try:
        report = verify(model, n_tokens=n_tokens, n_prompts=n_prompts, threads=threads, variants=variants)
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


def _table(report) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"agreement with own_engine fp32 on {report.model} ({report.n_tokens} tokens x "
                    f"{len(report.prompts)} prompts)")
    for col in ("engine", "format", "precision", "status", "tokens agree", "first diverges", "max |dlogit|", "KL",
                "text agrees"):
        t.add_column(col)
    for r in report.results:
        fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
        t.add_row(r.adapter, r.format, r.precision, r.status if not r.detail else f"{r.status}: {r.detail[:60]}",
                  fmt(r.token_agreement, ".0%"), "-" if r.first_divergence is None else str(r.first_divergence),
                  fmt(r.max_abs_diff, ".2g"), fmt(r.kl, ".2g"), fmt(r.text_agreement, ".0%"))
    Console().print(t)
