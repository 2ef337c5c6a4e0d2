"""An embed run's engine memory: its own process sampled while the schedule runs, else not known with the reason
(the sentence-transformers run needs that library: the embed test group runs it)."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from adapters.base import EngineInfo
from advisor.embed.bench import engine_process

HAS_ST = importlib.util.find_spec("sentence_transformers") is not None
if HAS_ST:
    from tests.adapters.test_sentence_transformers_embed import tiny_st  # noqa: F401 (the fixture)


def _info(pid: int | None) -> EngineInfo:
    return EngineInfo(adapter="x", engine="x", version="1", device="cpu", model="m", format="onnx", precision="fp32",
                      pid=pid)


def test_only_an_engine_process_of_its_own_is_sampled() -> None:
    assert engine_process(_info(4242)) == (4242, None)
    pid, why = engine_process(_info(None))
    assert pid is None and "server advisor did not start" in why
    pid, why = engine_process(_info(os.getpid()))  # ONNX Runtime, OpenVINO: the load generator's process too
    assert pid is None and "inside advisor's own process" in why


@pytest.mark.skipif(not HAS_ST, reason="needs sentence-transformers (the embed test group)")
def test_the_sentence_transformers_process_is_sampled_during_the_run(tiny_st: Path, tmp_path: Path) -> None:  # noqa: F811
    from advisor.embed.bench import run_embed

    yaml = tmp_path / "short.yaml"
    yaml.write_text("name: short\ndescription: a short embed run on the tiny model\n"
                    "workload: {task: embed, embed: {inputs_per_request: 4, chunk_words: 4}}\n"
                    "arrival: {process: constant, rate_rps: 10}\nduration_s: 2.5\nwarmup_s: 0.5\n")
    run = run_embed(str(yaml), "sentence-transformers", str(tiny_st), {"threads": 1}, out_root=tmp_path / "runs",
                    telemetry_interval_s=0.5)
    t = run.telemetry
    assert t is not None and t.pid == run.engine.pid != os.getpid() and t.rss_absent_reason is None
    sampled = [s["rss_mb"] for s in t.samples if "rss_mb" in s]
    assert len(sampled) >= 4  # one at the start, every 0.5 s over the 3 s schedule, one at the end
    # torch and the model are loaded in that process: far more than an empty interpreter; the peak is the
    # kernel's high-water mark, so at least every sample
    assert min(sampled) > 100 and t.rss_peak_mb >= max(sampled)
    saved = json.loads((run.path / "result.json").read_text())
    assert saved["telemetry"]["rss_peak_mb"] == pytest.approx(t.rss_peak_mb)
    assert saved["telemetry"]["pid"] == saved["engine"]["pid"]
    # the padded batches came through to the records and the summary (4 chunks of 4 words)
    assert saved["summary"]["padding_waste"]["n"] == run.summary.n_ok > 0
    assert saved["summary"]["padding_waste_run"] is not None
