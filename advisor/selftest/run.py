"""`advisor selftest`: does advisor measure right on this machine? Every check, one JSON document, one HTML page.

Runs the checks of advisor.selftest.checks and advisor.selftest.runs in order
(NVML, greedy ids on `tiny` and `small-100m`, the bare step, a served run, continuous
against static batching), each timed. A check that raises is a failed check
that names the error; a signal (Ctrl-C) stops at once, but what was measured so
far is written first, marked interrupted. No network: models missing from the
cache are created with random weights. The documents are written after every
check, so a crash never loses the checks before it.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from advisor.run import interrupts
from advisor.selftest.model import Check, SelftestConfig

JSON_NAME = "selftest.json"
HTML_NAME = "selftest.html"


def plan(cfg: SelftestConfig) -> list[tuple[str, Callable[[], Check]]]:
    """The checks to run, in order: (name, run)."""
    from advisor.selftest import checks as c
    from advisor.selftest import runs as r

    return [("nvml", lambda: c.nvml_check(cfg)),
            ("greedy:tiny", lambda: c.greedy_check(cfg, "tiny")),
            ("greedy:small-100m", lambda: c.greedy_check(cfg, "small-100m")),
            ("step", lambda: c.step_check(cfg)),
            ("served", lambda: r.served_check(cfg)),
            ("batching", lambda: r.batching_check(cfg))]


def environment(cfg: SelftestConfig) -> dict[str, Any]:
    """The run manifest (hardware, software, package versions) and the device measured."""
    import torch

    from advisor.run.manifest import collect

    env = {**collect(), "device": cfg.device, "torch_threads": torch.get_num_threads()}
    if cfg.device == "cuda":
        env["gpu"] = torch.cuda.get_device_name(0)
        env["cuda"] = torch.version.cuda
    return env


def document(cfg: SelftestConfig, checks: list[Check], started_s: float, env: dict[str, Any],
             interrupted: str | None = None) -> dict[str, Any]:
    failed = [c for c in checks if c.status == "fail"]
    return {"selftest": 1, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "device": cfg.device, "quick": cfg.quick, "step_model": cfg.step_model, "environment": env,
            "passed": not failed and interrupted is None, "interrupted_by": interrupted,
            "failed": [f"{c.title}: {c.summary}" for c in failed], "seconds": round(time.perf_counter() - started_s, 1),
            "checks": [c.to_dict() for c in checks]}


def write(out_dir: Path, doc: dict[str, Any]) -> tuple[Path, Path]:
    """selftest.json and selftest.html under `out_dir`."""
    from advisor.selftest.html import render

    out_dir.mkdir(parents=True, exist_ok=True)
    j, h = out_dir / JSON_NAME, out_dir / HTML_NAME
    j.write_text(json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n")
    h.write_text(render(doc))
    return j, h


def run_selftest(cfg: SelftestConfig, on_check: Callable[[Check], None] | None = None,
                 checks: list[tuple[str, Callable[[], Check]]] | None = None) -> dict[str, Any]:
    """Run every check, writing the documents after each; returns the JSON document (`passed` says all passed).

    Raises `interrupts.Interrupted` after writing what was measured when a signal stops it.
    """
    t0 = time.perf_counter()
    env = environment(cfg)
    done: list[Check] = []
    for name, run in checks if checks is not None else plan(cfg):
        t = time.perf_counter()
        try:
            check = run()
        except interrupts.Interrupted as e:
            write(cfg.out_dir, document(cfg, done, t0, env, interrupted=e.name))
            raise
        except Exception as e:  # a crashed check is a failed check, in words, and the others still run
            check = Check(name, name, "fail", f"the check crashed: {type(e).__name__}: {str(e)[:400]}",
                          {"traceback": traceback.format_exc(limit=-6)})
        check = replace(check, seconds=round(time.perf_counter() - t, 2))
        done.append(check)
        write(cfg.out_dir, document(cfg, done, t0, env))
        if on_check is not None:
            on_check(check)
    return document(cfg, done, t0, env)
