"""`advisor generate`: one greedy request, the quickest check that an engine and a model work."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import click

from adapters import BUILTIN_ENGINE
from model_cache.resolve import resolve_model
from model_cache.tokenizer import load_tokenizer


def _model_folder(model: str | None) -> Path | None:
    """The model folder (or the folder holding a model file), if there is one."""
    if model is None:  # an engine without a model (fake)
        return None
    path = Path(model).expanduser()
    folder = path.parent if path.is_file() else path
    if not folder.is_dir():
        try:
            folder = resolve_model(model)  # a name in the model cache
        except FileNotFoundError:
            return None
    return folder


def _vocab_size(folder: Path | None, tok) -> int | None:  # noqa: ANN001 (tokenizers.Tokenizer | None)
    """The model's vocabulary size: config.json's vocab_size, else its tokenizer's; None when neither is there."""
    try:
        size = json.loads((folder / "config.json").read_text()).get("vocab_size") if folder else None
    except (OSError, json.JSONDecodeError, AttributeError):
        size = None
    if isinstance(size, int) and size > 0:
        return size
    return tok.get_vocab_size(with_added_tokens=True) if tok is not None else None


def _check_ids(ids: tuple[int, ...], vocab: int | None) -> None:
    """Every id in [0, vocab) before anything decodes or sends it (a negative id has no token in any model)."""
    bad = [i for i in ids if i < 0 or (vocab is not None and i >= vocab)]
    if bad:
        valid = f"in [0, {vocab}), the model's vocabulary" if vocab is not None else "of 0 or more"
        raise click.UsageError(f"--prompt-ids: token id {bad[0]} is out of range; give ids {valid}")


@click.command("generate")
@click.option("--engine", "engine", default=BUILTIN_ENGINE, show_default=True,
              help="an in-process engine (see `advisor engines`); a server needs `advisor bench`")
@click.option("--model", "model", default=None, help="model folder, file or cache name (default: tiny)")
@click.option("--prompt", "prompt", default=None, help="prompt text (needs the model's tokenizer.json)")
@click.option("--prompt-ids", "prompt_ids", default=None, help="comma-separated prompt token ids, e.g. 1,2,3")
@click.option("--max-tokens", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--temperature", type=click.FloatRange(min=0.0), default=0.0, show_default=True,
              help="0 is greedy")
@click.option("--seed", type=int, default=None, help="sampling seed")
@click.option("--json", "as_json", is_flag=True, help="print one JSON document")
def generate_command(engine: str, model: str | None, prompt: str | None, prompt_ids: str | None, max_tokens: int,
                     temperature: float, seed: int | None, as_json: bool) -> None:
    """Run one request on an engine and print the output token ids and text."""
    import adapters
    from adapters.base import AdapterError, EngineUnavailable, RequestSpec

    if (prompt is None) == (prompt_ids is None):
        raise click.UsageError("give exactly one of --prompt TEXT or --prompt-ids 1,2,3")
    _check_engine(engine)
    if adapters.adapter_class(engine).capabilities.model_source == "folder":  # resolved here for its tokenizer
        try:
            model = str(resolve_model(model))
        except FileNotFoundError as e:
            raise click.UsageError(str(e)) from None
    folder = _model_folder(model)
    tok = load_tokenizer(folder) if folder is not None else None
    if prompt_ids is not None:
        try:
            ids = tuple(int(x) for x in prompt_ids.replace(" ", "").split(",") if x)
        except ValueError:
            raise click.UsageError(f"--prompt-ids must be comma-separated integers, got '{prompt_ids}'") from None
        if not ids:
            raise click.UsageError("--prompt-ids is empty; give at least one token id")
        _check_ids(ids, _vocab_size(folder, tok))
        text_in = tok.decode(list(ids)) if tok else None
    else:
        if tok is None:
            raise click.UsageError(f"no tokenizer.json found for model '{model}'; pass --prompt-ids instead")
        assert prompt is not None
        ids = tuple(tok.encode(prompt).ids)
        text_in = prompt
        if not ids:
            raise click.UsageError("--prompt encodes to no tokens; give some text")
    try:
        adapter = adapters.create(engine, model)
    except EngineUnavailable as e:
        raise click.ClickException(str(e)) from None
    req = RequestSpec("generate-0", ids, max_tokens=max_tokens, ignore_eos=False, temperature=temperature,
                      seed=seed, prompt_text=text_in)
    try:
        info = adapter.start()
        t0 = time.perf_counter_ns()
        chunks = asyncio.run(_collect(adapter, req))
    except AdapterError as e:
        raise click.ClickException(f"{engine} failed ({e.kind}): {e}") from None
    finally:
        adapter.close()
    ids_seen = [c.token_ids for c in chunks]
    out_ids = [t for ids in ids_seen for t in ids] if all(ids is not None for ids in ids_seen) else None
    texts = [c.text for c in chunks if c.text is not None]
    text = "".join(texts) if texts else (tok.decode(out_ids) if tok and out_ids is not None else None)
    n_out = sum(c.n_tokens for c in chunks)
    doc = {"engine": engine, "model": info.model, "device": info.device, "prompt_ids": list(ids),
           "output_ids": out_ids, "text": text, "n_tokens": n_out,
           "ttft_ms": (chunks[0].t_ns - t0) / 1e6 if chunks else None,
           "total_ms": (chunks[-1].t_ns - t0) / 1e6 if chunks else None}
    if as_json:
        click.echo(json.dumps(doc))
        return
    click.echo(f"engine: {engine} ({info.engine} {info.version}, {info.device}, {info.precision})")
    click.echo(f"model:  {info.model}")
    click.echo(f"prompt ids ({len(ids)}): {list(ids)}")
    click.echo(f"output ids ({n_out}): {out_ids if out_ids is not None else 'not reported by this engine'}")
    click.echo(f"text: {text!r}" if text is not None else "text: (no tokenizer.json next to the model)")


def _check_engine(engine: str) -> None:
    """An engine generate can drive: registered, and started from the model alone (a server needs bench's flags)."""
    import adapters

    if engine not in adapters.REGISTRY:
        raise click.UsageError(f"unknown engine '{engine}'; choose one of: {', '.join(sorted(adapters.REGISTRY))}")
    if adapters.adapter_class(engine).capabilities.served:
        local = sorted(n for n in adapters.REGISTRY if not adapters.adapter_class(n).capabilities.served)
        raise click.UsageError(f"generate runs in-process engines only ({', '.join(local)}); for a server use "
                               f"`advisor bench --engine {engine} --url http://HOST:PORT`")


async def _collect(adapter, req):  # -> list[Chunk]
    return [c async for c in adapter.stream(req)]
