"""`advisor selftest`: does advisor measure right on this machine? One JSON document and one HTML page."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click


@click.command("selftest")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="where own_engine runs (auto: cuda when torch sees a GPU, else cpu)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="folder for selftest.json, selftest.html and the served runs (default: runs/selftest-<time>)")
@click.option("--quick", is_flag=True, help="smaller models and shorter runs (25 s on a 2-core CPU once the models exist)")
@click.option("--step-model", default="", help="model of the bare-step check: a preset (created if missing), a "
                                                "cached model or a model folder (default: llama-1b on cuda, "
                                                "small-100m on cpu, tiny with --quick)")
@click.option("--json", "as_json", is_flag=True, help="print the JSON document and nothing else")
@click.pass_context
def selftest_command(ctx: click.Context, device: str, out_dir: Path | None, quick: bool, step_model: str,
                     as_json: bool) -> None:
    """Check that advisor measures right here: NVML, greedy ids against the CPU fp32 reference, the bare decode
    step against transformers (bandwidth, MBU), a served run with telemetry, continuous against static batching.

    \b
    No network: missing models are created with random weights. Exit status 1 when a check failed.
    Examples:
      advisor selftest                  # on a GPU machine: at most ~8 minutes
      advisor selftest --device cpu --quick
    """
    step_model = _step_model(step_model)
    import torch

    from advisor.selftest.model import SelftestConfig
    from advisor.selftest.run import HTML_NAME, JSON_NAME, run_selftest

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda" and not torch.cuda.is_available():
        raise click.UsageError("--device cuda: torch sees no CUDA GPU here (torch "
                               f"{torch.__version__}); use --device cpu, or install a CUDA build of torch")
    out = out_dir or Path("runs") / f"selftest-{time.strftime('%Y%m%d-%H%M%S')}"
    from advisor.run.bench import BenchError, check_out_dir

    try:
        check_out_dir(out)
    except BenchError as e:
        raise click.UsageError(str(e)) from None
    cfg = SelftestConfig(device=device, out_dir=out, quick=quick, step_model=step_model)  # type: ignore[arg-type]
    if not as_json:
        click.echo(f"advisor selftest on {device}{' (quick)' if quick else ''}; writing {out}/", err=True)

    def said(check) -> None:  # noqa: ANN001
        if not as_json:
            mark = {"pass": "PASS", "fail": "FAIL", "warn": "WARN", "n/a": "n/a "}[check.status]
            click.echo(f"  {mark}  {check.title} ({check.seconds:.0f} s): {check.summary}", err=True)

    doc = run_selftest(cfg, on_check=said)
    if as_json:
        click.echo(json.dumps(doc, allow_nan=False, default=str))
    else:
        verdict = "every check passed" if doc["passed"] else f"{len(doc['failed'])} check(s) FAILED"
        click.echo(f"{verdict} in {doc['seconds']:.0f} s; {out / JSON_NAME}, {out / HTML_NAME}", err=True)
    ctx.exit(0 if doc["passed"] else 1)


def _step_model(value: str) -> str:
    """--step-model checked before anything runs: "" (the default pick), a preset, a cached model or a model folder."""
    from model_cache.paths import is_model_dir, models_root
    from model_cache.presets import PRESETS

    if not value or value in PRESETS or is_model_dir(models_root() / value):
        return value
    path = Path(value).expanduser()
    if is_model_dir(path):
        return str(path.resolve())  # the check looks a relative name up in the model cache
    raise click.UsageError(f"--step-model '{value}' is not a preset ({', '.join(PRESETS)}), a cached model "
                           "(`advisor models list`) or a model folder with a config.json")
