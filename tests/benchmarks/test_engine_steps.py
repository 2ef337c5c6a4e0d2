"""benchmarks/engine_steps.py rebuilds an own_engine run's steps from its tokens' engine stamps: checked against
steps laid out by hand (the ground truth), then on a real saved H200 run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "data" / "gpu_h200_2026_11_26"


def _module():
    spec = importlib.util.spec_from_file_location("engine_steps", ROOT / "benchmarks" / "engine_steps.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(tmp_path: Path, requests: list[dict]) -> Path:
    pd.DataFrame(requests).to_parquet(tmp_path / "requests.parquet")
    return tmp_path


def test_steps_are_rebuilt_from_the_engine_stamps(tmp_path):
    ms = 1_000_000
    # engine steps at 0, 4, 8 (decodes), 100 (a prompt joins beside them: 92 ms), 104: the truth laid out by hand
    a = {"n_in": 50, "chunk_t_engine_ns": [0, 4 * ms, 8 * ms, 100 * ms, 104 * ms], "chunk_tokens": [1, 1, 1, 1, 1]}
    b = {"n_in": 700, "chunk_t_engine_ns": [100 * ms, 104 * ms], "chunk_tokens": [1, 2]}
    failed = {"n_in": 9, "chunk_t_engine_ns": [], "chunk_tokens": []}  # no stamps: left out
    steps = _module().steps_of(_write(tmp_path, [a, b, failed]))
    assert steps.gap_ms.tolist() == [4.0, 4.0, 92.0, 4.0]
    assert steps.batch.tolist() == [1, 1, 2, 2]
    assert steps.prompts.tolist() == [0, 0, 1, 0]
    assert steps.prompt_tokens.tolist() == [0, 0, 700, 0]
    assert steps.max_context.tolist() == [51, 52, 700, 701]  # a's context grows a token a step; b starts at 700


def test_summary_splits_decode_only_steps_from_prompt_steps(tmp_path):
    ms = 1_000_000
    a = {"n_in": 10, "chunk_t_engine_ns": [i * 2 * ms for i in range(11)], "chunk_tokens": [1] * 11}
    b = {"n_in": 300, "chunk_t_engine_ns": [60 * ms], "chunk_tokens": [1]}  # a step of its own, 40 ms after a's last
    mod = _module()
    run = _write(tmp_path, [a, b])
    s = mod.summary(run, mod.steps_of(run))
    assert (s["decode_steps"], s["prompt_steps"]) == (10, 1)
    assert s["decode_gap_ms_p50"] == 2.0 and s["prompt_gap_ms_p50"] == 40.0
    assert s["prompt_steps_share_of_wall"] == pytest.approx(40 / 60, abs=1e-3)


def test_a_run_without_engine_stamps_is_refused_in_words(tmp_path):
    run = _write(tmp_path, [{"n_in": 5, "chunk_t_engine_ns": [], "chunk_tokens": []}])
    with pytest.raises(SystemExit, match="own_engine run"):
        _module().steps_of(run)
    assert _module().main([str(tmp_path / "nowhere")]) == 2


def test_the_saved_h200_run_rebuilds(capsys):
    run = H200 / "20261126-010849-chat-closed-own-f415"
    assert _module().main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "2953 steps" in out and "with a prompt 209" in out
