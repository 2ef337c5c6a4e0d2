"""`advisor estimate`: a dense model's fit, latency and throughput on catalog GPUs, sized without running it.

The sizing model is advisor/sizing/ (aiconfigurator's measured operator tables, a serving model, a range from
its backtest). This module turns the flags into its inputs and finds every bad one before anything is computed;
estimate_table.py prints the rows, estimate_backtest.py runs and prints `--backtest`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from advisor_cli.output import Refused, json_document

if TYPE_CHECKING:
    from advisor.sizing.estimate import Gpu, SizingEstimate

LOAD_FLAGS = "--concurrency N, --rate R or --max-throughput"


@click.command("estimate")
@click.option("--model-config", "model", metavar="NAME|FILE",
              help="A shipped model name ('Llama 3.3 70B', Qwen3-32B, ...) or an HF config.json (or its folder); "
                   "dense models only.")
@click.option("--hardware", metavar="ID|all",
              help="Catalog GPU id (h200, h100-sxm, b200, mi300x, ...; see `advisor hardware`), gb200, or all.")
@click.option("--tp", type=click.IntRange(min=1), default=None,
              help="Tensor-parallel degree: 1, 2, 4 or 8. Without it: every degree that splits the model's heads.")
@click.option("--engine", metavar="E|all", help="vllm, sglang, trtllm, own, or all.")
@click.option("--precision", "precision_name", default="bf16", show_default=True,
              help="Weights: bf16, fp8, fp4 or int4.")
@click.option("--isl", type=int, default=None, help="Input (prompt) tokens per request.")
@click.option("--osl", type=int, default=None, help="Output tokens per request.")
@click.option("--concurrency", type=float, default=None, help="Load: requests in flight (a closed loop).")
@click.option("--rate", type=float, default=None, help="Load: requests per second to serve.")
@click.option("--max-throughput", is_flag=True, help="Load: as many requests in flight as the KV cache and engine hold.")
@click.option("--backtest", "backtest_file", is_flag=False, flag_value="-", default=None, metavar="[FILE]",
              help="Instead of an estimate: the model's error against measured rows of FILE (aiconfigurator's "
                   "silicon_sample.csv; default the shipped dense subset) and the ranges estimates carry.")
@click.option("--write", is_flag=True, help="With --backtest: save the fitted constants and ranges to "
              "advisor/sizing/data/fit.yaml (what every estimate reads).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document and nothing else.")
def estimate_command(model: str | None, hardware: str | None, tp: int | None, engine: str | None,
                     precision_name: str, isl: int | None, osl: int | None, concurrency: float | None,
                     rate: float | None, max_throughput: bool, backtest_file: str | None, write: bool,
                     as_json: bool) -> None:
    """Size a dense model on catalog GPUs: does it fit, at what TP, with what TTFT, TPOT and throughput.

    \b
    advisor estimate --model-config "Llama 3.3 70B" --hardware h200 --engine vllm --precision fp8 \\
        --isl 1024 --osl 1024 --rate 20
    advisor estimate --model-config Qwen3-32B --hardware all --engine all --isl 2000 --osl 500 --max-throughput
    advisor estimate --backtest            # how far off the model is on public measurements
    """
    flags = {"--model-config": model, "--hardware": hardware, "--tp": tp, "--engine": engine, "--isl": isl,
             "--osl": osl, "--concurrency": concurrency, "--rate": rate, "--max-throughput": max_throughput or None}
    if backtest_file is not None:
        given = [f for f, v in flags.items() if v is not None]
        if given or precision_name != "bf16":
            raise click.UsageError(f"--backtest sizes nothing; drop {', '.join(given or ['--precision'])}")
        from advisor_cli.estimate_backtest import backtest

        backtest(None if backtest_file == "-" else backtest_file, write, as_json)
        return
    if write:
        raise click.UsageError("--write saves a backtest's fit: give it with --backtest [FILE]")
    missing = [f for f in ("--model-config", "--hardware", "--engine", "--isl", "--osl") if flags[f] is None]
    if missing:
        raise click.UsageError(f"missing {', '.join(missing)} (or --backtest [FILE] for the model's error)")
    loads = [f for f in ("--concurrency", "--rate", "--max-throughput") if flags[f] is not None]
    if len(loads) != 1:
        got = f"; got {' and '.join(loads)}" if loads else ""
        raise click.UsageError(f"give exactly one load: {LOAD_FLAGS}{got}")
    assert model is not None and hardware is not None and engine is not None and isl is not None and osl is not None
    rows = _estimates(model, hardware, tp, engine, precision_name, isl, osl, concurrency, rate, max_throughput, as_json)
    if as_json:
        click.echo(json_document(as_document(rows)))


def _estimates(model: str, hardware: str, tp: int | None, engine: str, precision_name: str, isl: int, osl: int,
               concurrency: float | None, rate: float | None, max_throughput: bool,
               as_json: bool) -> list[SizingEstimate]:
    """Check every input, then estimate each GPU x engine x TP; printed here unless --json."""
    from advisor.catalog import load_catalog
    from advisor.sizing.architecture import load_architecture
    from advisor.sizing.errors import SizingError
    from advisor.sizing.estimate import ENGINES, Load, estimate
    from advisor.sizing.memory import TP_DEGREES, tp_degrees
    from advisor.sizing.precision import precision

    if engine != "all" and engine not in ENGINES:
        raise click.UsageError(f"unknown --engine {engine!r}: choose one of {', '.join(ENGINES)}, or all")
    for flag, n in (("--isl", isl), ("--osl", osl)):
        if n < 1:
            raise click.UsageError(f"{flag} {n}: give a whole number of tokens, at least 1")
    if tp is not None and tp not in TP_DEGREES:
        raise click.UsageError(f"--tp {tp}: the sizing model knows TP {', '.join(map(str, TP_DEGREES))} (one node)")
    try:
        load = Load(concurrency, rate, max_throughput)
        prec = precision(precision_name)
        arch = load_architecture(model)
        catalog = load_catalog()
        gpus = _gpus(hardware, catalog)
        engines = ENGINES if engine == "all" else (engine,)
        rows = [estimate(arch, g, t, e, prec, isl, osl, load)
                for g in gpus for e in engines for t in ((tp,) if tp else tp_degrees(arch))]
    except SizingError as e:
        raise Refused(str(e)) from None
    if not as_json:
        from advisor_cli.estimate_table import print_estimates

        print_estimates(arch, gpus, engines, prec.name, isl, osl, str(load), rows)
    return rows


def _gpus(hardware: str, catalog: Any) -> list[Gpu]:
    """One GPU, or with `all` every catalog GPU and every measured GPU the catalog lacks (gb200)."""
    from advisor.sizing.errors import SizingError
    from advisor.sizing.estimate import resolve_gpu
    from advisor.sizing.transfer import gpus as sizing_gpus

    if hardware != "all":
        try:
            return [resolve_gpu(hardware, catalog)]
        except SizingError as e:
            raise SizingError(f"{e}; or all") from None
    extra = [t for t, g in sizing_gpus()["measured"].items() if not g.get("catalog")]
    return [resolve_gpu(h, catalog) for h in [h.id for h in catalog.hardware.values() if h.kind == "gpu"] + extra]


def as_document(rows: list[SizingEstimate]) -> dict[str, Any]:
    """`{"estimates": [...]}`; a single option's keys also at the top level, so `jq .ttft_ms` reads it."""
    estimates = [r.to_dict() for r in rows]
    return {**(estimates[0] if len(estimates) == 1 else {}), "estimates": estimates}
