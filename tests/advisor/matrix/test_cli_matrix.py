"""`advisor matrix` run here: runs land in the store as bench/sweep save them; failures, bad input, interrupts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from advisor.saved.store import list_runs, load_run
from advisor.sweep.run import load_sweep
from advisor_cli import cli
from tests.advisor.matrix.plans import write_plan


def advisor(*args: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """The real entry point (exit codes and error lines as a user sees them)."""
    return subprocess.run([sys.executable, "-c", f"{code}from advisor_cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120)


def matrix_doc(root):
    (path,) = root.glob("*-matrix-*/matrix.json")
    return json.loads(path.read_text())


def test_a_local_matrix_saves_runs_sweeps_and_its_file(tmp_path):
    plan = write_plan(tmp_path, [{"name": "one", "rate": 10},
                                 {"name": "sweep", "rates": [5, 10]},
                                 {"name": "broken", "engine": "openai", "options": {"url": "http://127.0.0.1:9"}}])
    runs = tmp_path / "runs"
    res = CliRunner().invoke(cli, ["matrix", str(plan), "--out", str(runs), "--json"])
    assert res.exit_code == 1, res.output  # one cell failed; the others are kept
    doc = json.loads(res.stdout)
    assert doc == matrix_doc(runs) | {"updated_utc": doc["updated_utc"]}
    cells = {c["name"]: c for c in doc["cells"]}
    assert doc["state"] == "failed" and doc["backend"] == "local"
    assert cells["one"]["state"] == "done" and len(cells["one"]["run_ids"]) == 1
    assert cells["sweep"]["state"] == "done" and len(cells["sweep"]["run_ids"]) == 2
    assert cells["broken"]["state"] == "failed" and "no OpenAI-compatible server answers" in cells["broken"]["error"]
    assert [a["outcome"] for a in cells["one"]["attempts"]] == ["done"]
    # the store holds ordinary runs and sweeps: what report, recommend and the dashboard read
    run = load_run(cells["one"]["run_ids"][0], runs)
    assert run.engine.adapter == "fake" and run.schedule.overrides.rate_rps == 10 and run.records()
    sweep = load_sweep(cells["sweep"]["sweep_id"], runs)
    assert [p.run_id for p in sweep.points] == cells["sweep"]["run_ids"]
    assert {r.run_id for r in list_runs(runs)} == {*cells["one"]["run_ids"], *cells["sweep"]["run_ids"]}
    assert not any(runs.glob("*/staging"))
    assert "[3/3] broken: FAILED: no OpenAI-compatible server answers" in res.stderr


def test_bad_plans_fail_before_anything_runs(tmp_path):
    plan = write_plan(tmp_path, [{"name": "a", "engine": "nope"}, {"name": "b", "scenario": "nonesuch"},
                                 {"name": "c", "resources": {"pool_a": 1}}, {"name": "d", "model": "/no/such/model"},
                                 {"name": "e", "options": {"tokens_per_chunk": 0}}, {"name": "ok"}])
    res = advisor("matrix", str(plan), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert lines[0].startswith("error: cell 'a': unknown engine 'nope'")
    assert lines[1].startswith("error: cell 'b': unknown scenario 'nonesuch'")
    assert lines[2].startswith("error: cell 'e': bad option for engine 'fake': tokens_per_chunk")
    assert len(lines) == 3  # the plan itself is wrong: placement is checked once it is right
    assert not (tmp_path / "runs").exists()
    plan = write_plan(tmp_path, [{"name": "c", "resources": {"pool_a": 1}}, {"name": "d", "model": "/no/such/model"},
                                 {"name": "ok"}])
    res = CliRunner().invoke(cli, ["matrix", str(plan), "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2 and "cell 'c' needs pool_a: 1 but this machine has none" in lines[0] and "--ray" in lines[0]
    assert lines[1].startswith("error: cell 'd': model /no/such/model not found on")
    assert not (tmp_path / "runs").exists()


def test_check_only_and_usage_errors(tmp_path):
    plan = write_plan(tmp_path, [{"name": "ok"}])
    res = CliRunner().invoke(cli, ["matrix", str(plan), "--out", str(tmp_path / "runs"), "--check"])
    assert res.exit_code == 0 and "plan ok: 1 cell(s) can run here" in res.stderr
    assert not (tmp_path / "runs").exists()
    res = CliRunner().invoke(cli, ["matrix", "--out", str(tmp_path / "runs")])
    assert res.exit_code == 2 and "give a PLAN.yaml, or --resume MATRIX_ID" in res.output
    res = advisor("matrix", "--resume", "nope", "--out", str(tmp_path / "runs"))
    assert res.returncode == 1 and res.stderr.startswith("error: no matrix 'nope' (looked for ")
    res = CliRunner().invoke(cli, ["matrix", str(plan), "--out", "", "--check"])  # would save into the current folder
    assert res.exit_code == 2 and "an empty --out would save into the current folder" in res.output, res.output


def test_ray_without_the_extra_says_what_to_install(tmp_path):
    plan = write_plan(tmp_path, [{"name": "ok"}])
    res = advisor("matrix", str(plan), "--ray", "auto", "--out", str(tmp_path),
                  code="import sys; sys.modules['ray'] = None; ")  # as if Ray were not installed
    assert res.returncode == 1
    assert res.stderr.strip() == ("error: --ray needs Ray, which is not installed: pip install 'inference-advisor[ray]' "
                                  "(in a checkout: pip install -e '.[ray]')")


@pytest.mark.slow
def test_sigterm_keeps_finished_cells_and_resume_runs_the_rest(tmp_path):
    plan = write_plan(tmp_path, [{"name": "first", "rate": 10}, {"name": "long", "rate": 10, "duration": 8},
                                 {"name": "last", "rate": 10}])
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-c", "from advisor_cli import main; main()", "matrix", str(plan), "--out", str(runs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until the second cell has been running for a while
        docs = list(runs.glob("*-matrix-*/matrix.json"))
        if docs and json.loads(docs[0].read_text())["cells"][1]["state"] == "running":
            break
        time.sleep(0.2)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err  # 128 + SIGTERM
    doc = matrix_doc(runs)
    states = [c["state"] for c in doc["cells"]]
    assert doc["state"] == "interrupted" and doc["interrupted"] == ["long"] and states == ["done", "interrupted", "pending"]
    partial = doc["cells"][1]["run_ids"]
    assert len(partial) == 1 and load_run(partial[0], runs).verdict.status == "INVALID"  # saved, marked partial
    first_run = doc["cells"][0]["run_ids"]

    res = CliRunner().invoke(cli, ["matrix", "--resume", doc["matrix_id"], "--out", str(runs)])
    assert "resuming" in res.stderr and "2 of 3 cells to run" in res.stderr
    doc = matrix_doc(runs)
    cells = {c["name"]: c for c in doc["cells"]}
    assert cells["first"]["run_ids"] == first_run and len(cells["first"]["attempts"]) == 1  # skipped
    assert [a["outcome"] for a in cells["long"]["attempts"]] == ["interrupted", "done" if res.exit_code == 0 else "failed"]
    assert res.exit_code == 0 and doc["state"] == "done" and doc["interrupted"] == []


def test_a_ray_workers_cell_without_ray_fails_the_check_before_anything_runs(tmp_path):
    plan = write_plan(tmp_path, [{"name": "ok"}, {"name": "http", "engine": "openai", "workers": "ray:2",
                                                  "options": {"url": "http://127.0.0.1:9"}}])
    res = advisor("matrix", str(plan), "--out", str(tmp_path / "runs"),
                  code="import sys; sys.modules['ray'] = None; ")  # as if Ray were not installed
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == ("error: cell 'http': workers: ray:2 needs Ray, which is not installed: "
                                  "pip install 'inference-advisor[ray]' (in a checkout: pip install -e '.[ray]')")
    assert not (tmp_path / "runs").exists()  # the first cell did not run either


def test_the_table_shows_a_failed_cells_reason_verbatim(tmp_path, capsys):
    from advisor.matrix.plan import load_plan
    from advisor.matrix.store import MatrixFile
    from advisor_cli.matrix import _report

    m = MatrixFile("m", tmp_path, load_plan(write_plan(tmp_path, [{"name": "bad"}])), "local")
    m.cells["bad"].state, m.cells["bad"].error = "failed", "needs Ray: pip install 'inference-advisor[ray]'"
    _report(m, as_json=False)
    assert "'inference-advisor[ray]'" in capsys.readouterr().out  # rich markup did not eat "[ray]"


def test_resume_refuses_repeats(tmp_path):
    res = CliRunner().invoke(cli, ["matrix", "--resume", "x", "--repeats", "3", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--repeats" in res.output and "recorded plan" in res.output


def test_help_shows_the_plan_is_optional():
    res = CliRunner().invoke(cli, ["matrix", "--help"])
    assert res.exit_code == 0 and "matrix [OPTIONS] [PLAN.yaml]" in res.output  # --resume needs none
