"""Real saved runs for report and dashboard tests: the fake engine, a few seconds, no model.

`make_runs(root)` benchmarks the fake adapter at a few rates (one load curve), a
slower, failing variant, and copies one run under a hostile name
(`<script>alert(1)</script>` as scenario, model and error message), the way a
result.json written by someone else, or a server reporting its own model name,
could carry it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from advisor.run.bench import BenchConfig, bench_once
from advisor.saved.store import RESULT_FILE, RunResult, load_run
from scenarios.overrides import Overrides

EVIL = "<script>alert(1)</script>"
EVIL_RUN_ID = "20260101-000000-evil-0001"


def _bench(root: Path, rate: float, model: str, **engine: float) -> RunResult:
    ov = Overrides(rate_rps=rate, duration_s=1.2, warmup_s=0.2, max_input_tokens=64, max_output_tokens=12, seed=1)
    run = bench_once(BenchConfig(scenario="copilot", engine="fake", overrides=ov, engine_options=engine, out_dir=root))
    return _edit(run.path, lambda d: d["engine"].update(model=model))


def _edit(folder: Path, change) -> RunResult:
    f = folder / RESULT_FILE
    d = json.loads(f.read_text())
    change(d)
    f.write_text(json.dumps(d, indent=1))
    return load_run(folder)


def make_runs(root: Path) -> list[RunResult]:
    """Four real runs plus one hostile copy under `root`; about 5 s of wall time."""
    root.mkdir(parents=True, exist_ok=True)
    runs = [_bench(root, rate, "tiny-a", ttft_ms=20, tpot_ms=4) for rate in (25.0, 100.0)]
    # The 100 req/s run has the requests for a VALID verdict, but on a busy machine the load generator may lag
    # and make it INVALID; these tests are about rendering verdicts, not reaching one, so it is recorded VALID.
    if runs[1].verdict.status != "VALID":
        runs[1] = _edit(runs[1].path, lambda d: d.update(verdict={"status": "VALID", "reasons": []}))
    runs.append(_bench(root, 30.0, "tiny-b", ttft_ms=60, tpot_ms=9, fail_every=9))
    shutil.copytree(runs[0].path, root / EVIL_RUN_ID)

    def poison(d: dict) -> None:
        d["run_id"] = EVIL_RUN_ID
        d["scenario"]["name"] = EVIL
        d["scenario"]["description"] = f"hostile description {EVIL}"
        d["engine"]["model"] = EVIL
        d["verdict"] = {"status": "INVALID", "reasons": [f"server said {EVIL}"]}
        d["summary"]["errors_by_kind"] = {EVIL: 1}
        d["summary"]["n_errors"] = 1

    runs.append(_edit(root / EVIL_RUN_ID, poison))
    return runs
