"""`advisor compare A B`: differences beyond intervals, a JSON document, and a non-zero exit on a regression."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor_cli import cli
from tests.advisor.recommend.runs import make_run, write_runs


def group(gid: str, ttft_p95: list[float], rps: float = 2.0) -> list[dict]:
    out = []
    for i, t in enumerate(ttft_p95):
        r = make_run(f"{gid}-{i}", rps=rps * (1 + 0.01 * i), ttft_ms=t)
        r["schedule"]["repeat"] = {"group_id": gid, "index": i, "count": len(ttft_p95), "restart_engine": True}
        out.append(r)
    return out


@pytest.fixture
def root(tmp_path):
    return write_runs(tmp_path / "runs", group("base", [300, 310, 320]) + group("slow", [400, 410, 420])
                      + group("same", [305, 315, 330]) + [make_run("single-a", ttft_ms=300),
                                                          make_run("single-b", ttft_ms=303)])


def compare(root, *args):
    return CliRunner().invoke(cli, ["compare", "--runs", str(root), *args])


def test_a_regression_beyond_both_intervals_fails_the_gate(root):
    r = compare(root, "base", "slow", "--max-regression", "10", "--json")
    assert r.exit_code == 1, r.output
    assert "1 regression(s) past 10%" in r.stderr or "regression(s) past 10%" in r.stderr
    d = json.loads(r.stdout)  # stdout holds the JSON document and nothing else
    assert d["a"]["kind"] == "repeat group" and d["a"]["n"] == 3 and d["b"]["run_ids"] == ["slow-0", "slow-1", "slow-2"]
    ttft = next(f for f in d["figures"] if f["key"] == "ttft_p95_ms")
    assert ttft["differs"] and ttft["worse"] and ttft["regression"]
    assert ttft["change_pct"] == pytest.approx((410 - 310) / 310 * 100)
    assert ttft["a"]["coverage"] == pytest.approx(0.75)  # 3 repeats: a 75% interval, said so
    assert "ttft_p95_ms" in d["regressions"]


def test_a_change_under_the_threshold_or_inside_the_intervals_passes(root):
    assert compare(root, "base", "slow", "--max-regression", "50").exit_code == 0  # +32% < 50%
    r = compare(root, "base", "same", "--max-regression", "1", "--json")
    assert r.exit_code == 0, r.output
    ttft = next(f for f in json.loads(r.stdout)["figures"] if f["key"] == "ttft_p95_ms")
    assert not ttft["differs"] and ttft["verdict"] == "no difference established"


def test_without_a_threshold_it_only_reports(root):
    r = compare(root, "base", "slow")
    assert r.exit_code == 0 and "TTFT p95" in r.output and "B worse" in r.output


def test_single_runs_have_no_interval_and_say_so(root):
    r = compare(root, "single-a", "single-b", "--max-regression", "0.5", "--figures", "ttft_p95_ms", "--json")
    d = json.loads(r.stdout)
    assert r.exit_code == 1 and d["a"]["kind"] == "run" and len(d["figures"]) == 1
    assert any("single run has no interval" in n for n in d["notes"])


def test_cost_per_million_follows_throughput_with_a_given_price(root):
    d = json.loads(compare(root, "base", "slow", "--price-usd-hour", "3.6", "--json").stdout)
    cost = next(f for f in d["figures"] if f["key"] == "usd_per_1m_output")
    tps = next(f for f in d["figures"] if f["key"] == "output_tokens_per_s")
    assert cost["a"]["value"] == pytest.approx(3.6 / (tps["a"]["value"] * 3600) * 1e6)
    assert cost["a"]["low"] == pytest.approx(3.6 / (tps["a"]["high"] * 3600) * 1e6)  # a decreasing map


@pytest.mark.parametrize("args, message", [
    (["base", "nope"], "nope: no run or repeat group"),
    (["base", "slow", "--figures", "ttft_p42"], "unknown figure ttft_p42"),
    (["base", "slow", "--max-regression", "-1"], "--max-regression"),
    (["base", "slow", "--max-regression", "nan"], "'--max-regression': must be a finite number, got nan"),
    (["base", "slow", "--max-regression", "inf"], "'--max-regression': must be a finite number, got inf"),
    (["base", "slow", "--price-usd-hour", "inf", "--json"], "'--price-usd-hour': must be a finite number, got inf"),
    (["base", "slow", "--price-usd-hour", "nan", "--json"], "'--price-usd-hour': must be a finite number, got nan"),
])
def test_bad_input_is_one_line_naming_the_fix(root, args, message):
    r = compare(root, *args)
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_a_change_too_large_for_a_float_is_null_in_json_never_infinity():
    from advisor.metrics.intervals import Interval
    from advisor_cli.compare import compare as compare_figures

    (d,) = compare_figures({"ttft_p95_ms": Interval.point(5e-324)}, {"ttft_p95_ms": Interval.point(1.0)}, 10.0)
    assert d.to_dict()["change_pct"] is None and d.regression  # still past any threshold
    json.dumps(d.to_dict(), allow_nan=False)


def test_the_console_script_exits_1_on_a_regression(root):
    import subprocess
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-c", "from advisor_cli import main; main()", "compare", "--runs",
                               str(root), *args], capture_output=True, text=True, timeout=120)

    bad = run("base", "slow", "--max-regression", "10", "--json")
    assert bad.returncode == 1 and "regression(s) past 10%" in bad.stderr
    assert json.loads(bad.stdout)["regressions"]
    assert run("base", "same", "--max-regression", "10").returncode == 0


def _with_workload(run_id: str, scenario: str = "copilot", rate: float = 2.5, duration: float = 42.0) -> dict:
    r = make_run(run_id, scenario=scenario, rps=rate)
    r["schedule"]["effective"] = {"mode": "open", "arrival": {"process": "gamma", "rate_rps": rate, "cv": 1.5},
                                  "duration_s": duration, "warmup_s": 5.0, "seed": 0, "length_scale": 0.5}
    return r


def test_runs_of_different_loads_or_scenarios_are_said_to_be_so(tmp_path):
    # a run at 2.5 req/s against one at 3.5 req/s: "B better" on throughput is the load, not the engine
    root = write_runs(tmp_path / "runs", [_with_workload("at-2.5"), _with_workload("at-3.5", rate=3.5),
                                          _with_workload("other", scenario="code-fit"), _with_workload("again")])
    d = json.loads(compare(root, "at-2.5", "at-3.5", "--json").stdout)
    assert any(n.startswith("A and B ran different workloads (arrival.rate_rps 2.5 vs 3.5)") for n in d["notes"])
    d = json.loads(compare(root, "at-2.5", "other", "--json").stdout)
    assert any("scenario copilot vs code-fit" in n for n in d["notes"])
    d = json.loads(compare(root, "at-2.5", "again", "--json").stdout)
    assert not any("different workloads" in n for n in d["notes"])
    assert "different workloads" in " ".join(compare(root, "at-2.5", "at-3.5").output.split())


def test_a_sweep_id_says_what_to_compare_instead(root):
    from advisor.saved.store import load_run
    from advisor.sweep.capacity import SweepPoint, capacity_from_sweep
    from advisor.sweep.run import SweepResult

    points = (SweepPoint.from_run(2.0, load_run("single-a", root)),)
    SweepResult("sweep-x", "copilot", "own", None, "2026-11-23T00:00:00Z", points, capacity_from_sweep(points),
                "max steps").save(root)
    r = compare(root, "sweep-x", "single-b")
    assert r.exit_code == 2 and "sweep-x is a sweep: compare two of its steps' runs" in " ".join(r.output.split())


def test_the_same_unsaturated_open_loop_load_says_throughput_is_the_loads(tmp_path):
    # two engines at one offered rate, neither saturated: 27.9 vs 28.2 tok/s read "B better", a schedule artefact
    root = write_runs(tmp_path / "runs", [_with_workload("a"), _with_workload("b"),
                                          {**_with_workload("sat"), "verdict": {"status": "SATURATED", "reasons": []}}])
    note = "an open loop at the same offered load that neither side saturated"
    assert any(n.startswith(note) for n in json.loads(compare(root, "a", "b", "--json").stdout)["notes"])
    assert not any(n.startswith(note) for n in json.loads(compare(root, "a", "sat", "--json").stdout)["notes"])


H200_RUN = Path(__file__).resolve().parents[1] / "data" / "gpu_h200_2026_11_26" / "20261126-010437-chat-own-5881"


def _as_cpu_tiny(tmp_path: Path) -> Path:
    """The H200 run as if a tiny model had made it on a 2-vCPU VM (only the system fields edited)."""
    folder = tmp_path / "cpu-tiny"
    shutil.copytree(H200_RUN, folder)
    doc = json.loads((folder / "result.json").read_text())
    doc["run_id"] = "cpu-tiny"
    doc["engine"].update(model="/models/tiny", precision="fp32", kv_cache_dtype="fp32")
    doc["engine"]["extra"].update(n_params=894_000, model_config={**doc["engine"]["extra"]["model_config"],
                                                                  "hidden_size": 128, "num_hidden_layers": 2})
    doc["manifest"]["hardware"].update(cpu_model="AMD EPYC", cpu_cores=2, gpus=[])
    (folder / "result.json").write_text(json.dumps(doc))
    return folder


def test_a_regression_gate_between_two_systems_is_refused(tmp_path):
    # was: "3 regression(s)" and exit 1 for an H200 llama-1b run against a 2-vCPU tiny run
    cpu = _as_cpu_tiny(tmp_path)
    res = CliRunner().invoke(cli, ["compare", str(H200_RUN), str(cpu), "--max-regression", "10"])
    assert res.exit_code == 2, res.output
    [line] = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert "A and B are different systems (model llama-1b (1.04B parameters) vs tiny (894K parameters)" in line
    assert "precision bf16, KV bf16 vs fp32, KV fp32" in line and "NVIDIA H200 vs AMD EPYC x 2 cores, no GPU" in line
    assert "--allow-different" in line


def test_allow_different_compares_and_says_so_first(tmp_path):
    cpu = _as_cpu_tiny(tmp_path)
    res = CliRunner().invoke(cli, ["compare", str(H200_RUN), str(cpu), "--allow-different", "--json"])
    doc = json.loads(res.output)
    assert [d.split(" ")[0] for d in doc["different_systems"]] == ["model", "precision", "hardware"]
    assert doc["notes"][0].startswith("different systems: model llama-1b")
    text = CliRunner().invoke(cli, ["compare", str(H200_RUN), str(cpu), "--allow-different"]).output
    assert text.startswith("different systems: ")


def test_two_runs_of_one_system_are_not_different_systems(tmp_path):
    other = tmp_path / "same-system"
    shutil.copytree(H200_RUN, other)
    doc = json.loads((other / "result.json").read_text())
    doc["run_id"] = "same-system"
    doc["engine"].update(model="/elsewhere/llama-1b", version="2.0")  # another folder, an engine upgrade: one system
    (other / "result.json").write_text(json.dumps(doc))
    res = CliRunner().invoke(cli, ["compare", str(H200_RUN), str(other), "--max-regression", "10", "--json"])
    assert json.loads(res.output)["different_systems"] == []
