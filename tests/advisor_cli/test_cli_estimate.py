"""`advisor estimate`: what a buyer reads (fits, why, figures inside their range), every bad input in one line, and
the backtest on a small CSV (the shipped 1,063 rows take a minute, so no test runs them)."""

from __future__ import annotations

import csv
import json
import math

import pytest
from click.testing import CliRunner

from advisor.sizing import backtest as bt_mod
from advisor.sizing.estimate import ENGINES
from advisor_cli import cli

REQUIRED = ("fits", "why", "max_concurrency", "ttft_ms", "tpot_ms", "output_tok_s", "requests_per_s", "range", "basis")
LLAMA_70B = ["--model-config", "Llama 3.3 70B", "--isl", "1024", "--osl", "1024"]


def _run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["estimate", *args])


def _json(*args: str) -> dict:
    res = _run(*args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _one_line_error(res, words: str) -> None:  # type: ignore[no-untyped-def]
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and words in errors[0], res.output
    assert "Traceback" not in res.output


def test_a_single_option_puts_its_figures_at_the_top_level_finite_and_inside_their_range():
    doc = _json(*LLAMA_70B, "--hardware", "h200", "--tp", "2", "--engine", "vllm", "--precision", "fp8", "--rate", "2")
    assert set(REQUIRED) <= set(doc) and len(doc["estimates"]) == 1
    assert doc["fits"] is True and doc["why"] is None and doc["basis"] == "tables" and doc["max_concurrency"] > 0
    for key in ("ttft_ms", "tpot_ms", "output_tok_s", "requests_per_s"):
        lo, hi = doc["range"][key]
        assert all(math.isfinite(x) and x > 0 for x in (lo, doc[key], hi)) and lo <= doc[key] <= hi, key
    assert doc["requests_per_s"] == pytest.approx(2.0, rel=0.01)  # the rate asked is what it sizes


def test_an_option_that_does_not_fit_says_why_in_one_line():
    doc = _json("--model-config", "Llama 3.1 405B", "--hardware", "h100-sxm", "--tp", "8", "--engine", "vllm",
                "--isl", "1024", "--osl", "1024", "--concurrency", "1")
    assert doc["fits"] is False and doc["ttft_ms"] is None and "\n" not in doc["why"]
    assert "812 GB of weights" in doc["why"] and "use fp8" in doc["why"]
    res = _run("--model-config", "Llama 3.1 405B", "--hardware", "h100-sxm", "--engine", "vllm", "--isl", "1024",
               "--osl", "1024", "--concurrency", "1")
    header, answer = res.output.splitlines()[:2], res.output.splitlines()[2:]
    assert res.exit_code == 0 and "Llama 3.1 405B" in header[0] and len(answer) == 1  # no table of four refusals
    assert answer[0].startswith("fits on none of 1/2/4/8 x h100-sxm under vllm; at TP 8: Llama 3.1 405B")


def test_trtllm_on_mi300x_says_it_has_no_rocm_claim():
    doc = _json("--model-config", "Qwen3-32B", "--hardware", "mi300x", "--tp", "1", "--engine", "trtllm",
                "--isl", "1024", "--osl", "256", "--concurrency", "8")
    assert doc["fits"] is False and "no claim to run on rocm" in doc["why"]


@pytest.mark.parametrize(("model", "precision"), [("Llama 3.1 8B", "bf16"), ("Llama 3.3 70B", "fp8")])
def test_every_gpu_and_engine_fits_or_says_why(model, precision):
    args = ["--model-config", model, "--hardware", "all", "--engine", "all", "--precision", precision,
            "--isl", "2000", "--osl", "500"]
    doc = _json(*args, "--max-throughput")
    rows = doc["estimates"]
    assert {r["hardware"] for r in rows} >= {"h200", "h100-sxm", "mi300x", "l4", "gb200"}
    assert {r["engine"] for r in rows} == set(ENGINES) and "fits" not in doc  # many options: no top-level figures
    for r in rows:
        assert (r["fits"] and r["ttft_ms"] is not None and r["why"] is None) or r["why"], r
    assert any(r["fits"] and r["ttft_ms"] for r in rows)
    res = _run(*args, "--rate", "5")
    assert res.exit_code == 0 and "gb200" in res.output and "why:" in res.output, res.output


def test_bad_input_is_one_line_and_exit_2_before_anything_is_sized(tmp_path):
    moe = tmp_path / "config.json"
    moe.write_text(json.dumps({"model_type": "mixtral", "num_local_experts": 8, "hidden_size": 4096}))
    base = ["--engine", "vllm", "--isl", "100", "--osl", "100"]
    _one_line_error(_run("--model-config", "Qwen3-8B", "--hardware", "h999", *base, "--rate", "1"),
                    "unknown GPU 'h999': give one of")
    _one_line_error(_run("--model-config", str(moe), "--hardware", "h200", *base, "--rate", "1"),
                    "MoE models are not sized yet")
    _one_line_error(_run("--model-config", str(tmp_path / "nope.json"), "--hardware", "h200", *base, "--rate", "1"),
                    "no such file")
    _one_line_error(_run("--model-config", "Qwen3-8B", "--hardware", "h200", *base, "--rate", "1", "--concurrency", "4"),
                    "give exactly one load: --concurrency N, --rate R or --max-throughput; got --concurrency and --rate")
    _one_line_error(_run("--model-config", "Qwen3-8B", "--hardware", "h200", "--engine", "tgi", "--isl", "1", "--osl",
                         "1", "--rate", "1"), "unknown --engine 'tgi'")
    _one_line_error(_run("--model-config", "Qwen3-8B", "--hardware", "h200", *base[:2], "--isl", "0", "--osl", "1",
                         "--rate", "1"), "--isl 0: give a whole number of tokens, at least 1")
    _one_line_error(_run("--backtest", str(tmp_path / "missing.csv")), "no such file")


def test_help_names_every_engine():
    res = _run("--help")
    assert res.exit_code == 0 and all(e in res.output for e in ENGINES)


def _small_csv(tmp_path, engines=("vllm", "trtllm", "sglang")):  # type: ignore[no-untyped-def]
    """Two measured rows of each engine x GPU x model kept, from the shipped rows, and one MoE row."""
    with open(bt_mod.SILICON, newline="") as f:
        rows = list(csv.DictReader(f))
    keep = [("vllm", "h200_sxm", "meta-llama/Llama-3.1-70B"), ("vllm", "h100_sxm", "Qwen/Qwen3-32B"),
            ("trtllm", "h100_sxm", "meta-llama/Llama-3.1-8B-Instruct"), ("trtllm", "h200_sxm", "meta-llama/Llama-3.1-70B"),
            ("sglang", "h100_sxm", "Qwen/Qwen3-32B"), ("sglang", "h200_sxm", "meta-llama/Llama-3.1-8B-Instruct")]
    picked = [r for k in keep if k[0] in engines
              for r in [r for r in rows if (r["backend"], r["system"], r["model_path"]) == k][:2]]
    picked.append({**picked[0], "id": "moe-row", "model_path": "Qwen/Qwen3-30B-A3B"})
    path = tmp_path / "silicon_sample.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(picked)
    return path


def test_the_backtest_prints_each_engine_x_gpu_and_counts_the_skipped_moe_row(tmp_path):
    path = _small_csv(tmp_path)
    res = _run("--backtest", str(path))
    assert res.exit_code == 0, res.output
    for line in ("vllm x h200_sxm", "trtllm x h100_sxm", "GPU left out", "model left out", "transferred",
                 "1  not a shipped dense architecture (Qwen/Qwen3-30B-A3B)", "x/÷"):
        assert line in res.stdout, line
    doc = _json("--backtest", str(path))
    assert doc["rows"] == 12 and doc["skipped"] == {"not a shipped dense architecture (Qwen/Qwen3-30B-A3B)": 1}
    assert set(doc["schemes"]) == {"in-sample", "leave-one-gpu-out", "leave-one-model-out", "transferred"}
    assert doc["schemes"]["leave-one-gpu-out"]["cells"]["vllm x h200_sxm"]["rows"] == 2
    assert set(doc["range_factors"]) == {"tables", "transferred"} and doc["written"] is None


def test_a_csv_without_a_needed_column_is_named_in_one_line(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("id,backend,system\n1,vllm,h200_sxm\n")
    _one_line_error(_run("--backtest", str(path)), "no column 'model_path'")


@pytest.fixture
def fit_file(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """fit.yaml pointed at a copy in tmp, and its cache cleared after, so no test can change the shipped one."""
    dest = tmp_path / "fit.yaml"
    dest.write_text(bt_mod.FIT_FILE.read_text())
    monkeypatch.setattr(bt_mod, "FIT_FILE", dest)
    bt_mod.fitted.cache_clear()
    yield dest
    bt_mod.fitted.cache_clear()


def test_write_refuses_a_fit_that_would_drop_an_engine_and_says_when_it_fits_on_another_file(tmp_path, fit_file):
    before = fit_file.read_text()
    res = _run("--backtest", str(_small_csv(tmp_path, engines=("vllm", "trtllm"))), "--write")
    _one_line_error(res, "has no rows of sglang")
    assert fit_file.read_text() == before
    res = _run("--backtest", str(_small_csv(tmp_path)), "--write")
    assert res.exit_code == 0, res.output
    assert f"{fit_file} is now fitted on" in res.output and f"wrote {fit_file}" in res.stdout
    assert fit_file.read_text() != before and "silicon_sample.csv" in fit_file.read_text()


# Two inputs that once ended `--hardware all` in "error: ..." (a remedy search that recursed: int4 has fewer weight
# bytes but more KV bytes than fp8; an assert on a hole in A100's int4 GEMM grid): each is a row that says why.
def test_a_long_context_on_a_70b_says_why_instead_of_recursing():
    doc = _json(*LLAMA_70B[:2], "--isl", "100000", "--osl", "2000", "--hardware", "l4", "--tp", "1", "--engine",
                "vllm", "--concurrency", "1")
    assert doc["fits"] is False and doc["why"]


def test_int4_on_an_a100_under_trtllm_says_why_instead_of_asserting():
    doc = _json("--model-config", "Llama 3.1 8B", "--hardware", "a100-80gb", "--tp", "1", "--engine", "trtllm",
                "--precision", "int4", "--isl", "128", "--osl", "128", "--concurrency", "1")
    assert doc["fits"] is True and (doc["ttft_ms"] is not None or doc["why"])
