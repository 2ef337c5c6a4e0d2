"""`advisor recommend --model-config`: a model never run, sized on every catalog GPU from the operator tables."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from click.testing import CliRunner

from advisor.catalog import load_catalog
from advisor.sizing.estimate import resolve_gpu
from advisor_cli.recommend import recommend_command
from tests.advisor.recommend.h200 import CHAT, write_edited

LLAMA_8B = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "intermediate_size": 14336, "vocab_size": 128256}


def _recommend(runs: str, model: str, *more: str) -> dict[str, Any]:
    r = CliRunner().invoke(recommend_command, ["--model-config", model, "-s", "chat", "--peak-rps", "20", "--runs",
                                               runs, "--no-measure", "--json", *more], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _numbers(x: Any) -> list[float]:
    if isinstance(x, dict):
        return [n for v in x.values() for n in _numbers(v)]
    if isinstance(x, list):
        return [n for v in x for n in _numbers(v)]
    return [float(x)] if isinstance(x, int | float) and not isinstance(x, bool) else []


@pytest.fixture(scope="module")
def sized(tmp_path_factory) -> dict[str, dict[str, Any]]:
    empty = tmp_path_factory.mktemp("empty")
    return {m: _recommend(str(empty), m) for m in ("Llama 3.1 8B", "Llama 3.3 70B")}


@pytest.mark.parametrize("model", ["Llama 3.1 8B", "Llama 3.3 70B"])
def test_every_catalog_hardware_has_rows_or_a_reason(sized, model):
    d = sized[model]
    assert d["rows"] and d["best"] is not None and d["evidence_class"] in ("estimated from tables", "transferred")
    assert d["rests_on"].endswith(d["evidence_class"]) or f"; {d['evidence_class']}:" in d["rests_on"]
    with_rows = {r["hardware"] for r in d["rows"]}
    for hw in load_catalog().hardware.values():
        said = any(n.split(": no row", 1)[0].split(", ").count(hw.id) for n in d["notes"] if ": no row" in n)
        assert hw.id in with_rows or said, f"{hw.id}: neither a row nor a reason"
    assert all(math.isfinite(n) for n in _numbers(d)), "a number that is not finite"
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    for r in d["rows"]:
        assert r["source"] == "estimated" and r["run_id"] is None
        assert any(r["evidence_class"] in a for a in r["assumptions"])
        # a GPU with its own tables is estimated from them; one without borrows the nearest GPU's
        own_tables = resolve_gpu(r["hardware"], load_catalog()).table is not None
        assert r["evidence_class"] == ("estimated from tables" if own_tables else "transferred"), r["hardware"]
        assert any("high end" in a for a in r["assumptions"])
        assert r["capacity_rps_per_replica"] is None or r["latency_range_ms"]["tpot_ms"]["high"] <= 100 + 1e-6


def test_the_options_without_a_row_say_why(sized):
    notes = sized["Llama 3.3 70B"]["notes"]

    def said(hw: str, *words: str) -> bool:
        return any(n.split(": no row")[0].split(", ").count(hw) and all(w in n for w in words) for n in notes)

    assert said("l4", "vllm (Llama 3.3 70B, bf16)", "TP 1", "141 GB of weights")  # 70B bf16 does not fit an L4
    assert said("mi300x", "tensorrt_llm", "no claim to run on rocm")
    assert said("h200", "own (Llama 3.3 70B, bf16)", "TP 2", "no tensor parallelism")
    assert said("cpu-2core-vm", "GPU measurements")


def test_replicas_are_sized_at_the_low_end_of_the_capacity(sized):
    row = next(r for r in sized["Llama 3.1 8B"]["rows"] if r["capacity_rps_per_replica"])
    assert row["capacity_rps_per_replica"] == pytest.approx(row["capacity_range"]["low"])
    assert row["replicas"] == math.ceil(20 * 1.2 / row["capacity_rps_per_replica"] - 1e-9)


def test_a_measured_run_of_the_same_shape_comes_first(tmp_path):
    def as_8b(d: dict[str, Any]) -> None:
        d["engine"]["extra"].update(model_config=dict(LLAMA_8B), n_params=8_030_261_248)
        d["engine"]["model"] = "/models/llama-3.1-8b"

    write_edited(tmp_path, CHAT, "chat-own-8b", as_8b)
    write_edited(tmp_path, CHAT, "chat-own-1b", lambda d: None)  # another model: not a row of this one
    d = _recommend(str(tmp_path), "Llama 3.1 8B", "--hardware", "h200", "--hardware", "l40s")
    assert d["rows"][0]["source"] == "measured" and d["rows"][0]["run_id"] == "chat-own-8b"
    assert all(r["run_id"] != "chat-own-1b" for r in d["rows"])
    assert any("other models left out" in n for n in d["notes"])
    assert any("measured run(s) of this model" in a for r in d["rows"][1:] for a in r["assumptions"])
    # the first estimate says it comes after the measured row, never that it costs more than a dearer one
    first_estimate = next(r for r in d["rows"] if r["source"] == "estimated" and r.get("passes", True))
    assert "after the measured rows of this model" in first_estimate["why"]
    assert "at a higher cost than #1" not in first_estimate["why"]
