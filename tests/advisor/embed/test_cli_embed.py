"""`advisor embed`: bad input is one line and exit 2 before anything is measured; a run prints its figures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.adapters.embed_server import embeddings_server

ROOT = Path(__file__).resolve().parents[3]


def _advisor(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ADVISOR_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "advisor_cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _one_line_usage_error(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr
    assert lines[-1].startswith("Error: ") and all(n in lines[-1] for n in needles), p.stderr
    assert "Traceback" not in p.stderr


def test_a_generation_scenario_or_model_and_a_missing_url_are_refused(tmp_path: Path) -> None:
    _one_line_usage_error(_advisor("embed", "--scenario", "chat", cwd=tmp_path, home=tmp_path),
                          "is a generate scenario, not embed or rerank", "embed-query")
    lm = tmp_path / "lm"
    lm.mkdir()
    (lm / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    if subprocess.run([sys.executable, "-c", "import sentence_transformers"]).returncode == 0:
        _one_line_usage_error(_advisor("embed", "--model", str(lm), cwd=tmp_path, home=tmp_path),
                              "generation model, not an embedding model")
    _one_line_usage_error(_advisor("embed", "--engine", "openai-embed", cwd=tmp_path, home=tmp_path), "--url")
    if subprocess.run([sys.executable, "-c", "import sentence_transformers"]).returncode == 0:
        _one_line_usage_error(_advisor("embed", cwd=tmp_path, home=tmp_path), "needs an embedding model: give --model")
        assert not (tmp_path / "models").exists()  # the default (generation) model was not made
    assert not (tmp_path / "runs-embed").exists()  # nothing was measured or saved


def test_a_server_without_the_endpoint_is_refused_before_measuring(tmp_path: Path) -> None:
    with embeddings_server(endpoint=False) as url:
        p = _advisor("embed", "--engine", "openai-embed", "--url", url, cwd=tmp_path, home=tmp_path)
    _one_line_usage_error(p, "no /v1/embeddings endpoint")


@pytest.mark.parametrize("scenario", ["embed-ingest"])  # embed-query runs in tests/adapters/test_openai_embed.py
def test_a_run_prints_its_figures_and_saves_them(tmp_path: Path, scenario: str) -> None:
    with embeddings_server() as url:
        p = _advisor("embed", "--scenario", scenario, "--engine", "openai-embed", "--url", url, "--duration", "2",
                     "--warmup", "0", "--price-usd-per-hour", "2", cwd=tmp_path, home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "latency ms p50" in p.stdout and "tokens/s" in p.stdout and "$ per 1M tokens embedded" in p.stdout
    [result] = list((tmp_path / "runs-embed").glob("*/result.json"))
    doc = json.loads(result.read_text())
    assert doc["scenario"] == scenario and doc["summary"]["n_ok"] > 0
    # a server advisor did not start: neither its padding nor its memory is known, and neither is said to be 0
    assert "padding waste not known" in p.stdout and "engine memory not known (the engine is a server" in p.stdout
    assert doc["summary"]["padding_waste_run"] is None and doc["summary"]["padding_waste"]["n"] == 0
    assert doc["telemetry"]["rss_peak_mb"] is None and "did not start" in doc["telemetry"]["rss_absent_reason"]


def test_bench_refuses_an_embed_scenario_and_an_embedding_model(tmp_path: Path) -> None:
    _one_line_usage_error(_advisor("bench", "--scenario", str(ROOT / "scenarios/embed/embed-query.yaml"),
                                   cwd=tmp_path, home=tmp_path), "is an embed scenario", "advisor embed")
    st = tmp_path / "st"
    st.mkdir()
    (st / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    (st / "modules.json").write_text("[]")
    _one_line_usage_error(_advisor("bench", "--scenario", "chat", "--engine", "fake", "--model", str(st),
                                   cwd=tmp_path, home=tmp_path), "embedding model (sentence-transformers)")
    assert not (tmp_path / "runs").exists()


def test_engines_and_scenarios_list_the_embedding_ones_apart() -> None:
    from click.testing import CliRunner

    from advisor_cli import cli

    engines = CliRunner().invoke(cli, ["engines"], terminal_width=200)
    assert engines.exit_code == 0 and "embedding and rerank engines" in engines.output and "openai-embed" in engines.output
    listed = CliRunner().invoke(cli, ["scenarios"], terminal_width=200)
    assert listed.exit_code == 0 and "advisor embed --scenario NAME" in listed.output
    assert "embed-query" in listed.output and "embed-ingest" in listed.output


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_run_saves_what_was_measured_and_exits_128_plus_it(tmp_path: Path, sig: int) -> None:
    env = {**os.environ, "ADVISOR_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    with embeddings_server() as url:
        proc = subprocess.Popen([sys.executable, "-m", "advisor_cli", "embed", "--engine", "openai-embed", "--url", url,
                                 "--duration", "30", "--warmup", "0", "--rate", "20"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(6)  # start, preflight and some seconds of the 30 s measurement
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    [result] = list((tmp_path / "runs-embed").glob("*/result.json"))
    s = json.loads(result.read_text())["summary"]
    assert s["verdict"] == "INVALID" and s["reasons"][0].startswith(f"interrupted by {signal.Signals(sig).name} after")
    assert 0 < s["n_requests"] < 600 and s["n_ok"] == s["n_requests"]  # those that finished, none counted as failed
    assert f"interrupted by {signal.Signals(sig).name}" in err and "Traceback" not in err


def test_the_sender_keeps_the_finished_results_when_cancelled() -> None:
    import asyncio

    from advisor.embed.drive import send_on_schedule

    async def one(i: int, t_sched: int) -> int:
        await asyncio.sleep(0 if i < 3 else 10)  # three answer at once, the rest never before the cancel
        return i

    async def main() -> list[int]:
        task = asyncio.create_task(send_on_schedule([0.0, 0.0, 0.0, 0.0, 0.0, 5.0], time.perf_counter_ns(), one))
        await asyncio.sleep(0.2)
        task.cancel()
        return await task

    assert asyncio.run(main()) == [0, 1, 2]
