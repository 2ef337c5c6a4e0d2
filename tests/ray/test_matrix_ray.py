"""`advisor matrix --ray` against a real three-node cluster: placement, node death, resume, bad input.

Every cell uses the `fake` engine with short runs, so the cluster, not the benchmark, is what is tested.
The driver is the real `advisor` command in a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.advisor.matrix.plans import write_plan
from tests.ray.cluster import NodeSpec

pytestmark = pytest.mark.ray
CMD = [sys.executable, "-c", "from advisor_cli import main; main()", "matrix"]


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return {**e, **extra}


def advisor(*args: str, timeout: float = 240, prefix: tuple[str, ...] = (), **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, *CMD, *args], capture_output=True, text=True, timeout=timeout, env=env(**extra))


def doc_of(runs: Path) -> dict[str, Any] | None:
    docs = list(runs.glob("*-matrix-*/matrix.json"))
    return json.loads(docs[0].read_text()) if docs else None


def cells_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in doc["cells"]}


def wait_for(runs: Path, pred, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            doc = doc_of(runs)
        except json.JSONDecodeError:
            doc = None
        if doc is not None and pred(cells_of(doc)):
            return doc
        time.sleep(0.2)
    raise AssertionError(f"timed out; matrix file: {doc_of(runs)}")


def running_on(cell: dict[str, Any], attempt: int) -> str | None:
    """The node id of the cell's attempt number `attempt` while it runs, else None."""
    a = cell["attempts"]
    return a[-1]["node_id"] if len(a) == attempt and a[-1]["ended_utc"] is None else None


def shape(x: Any) -> Any:
    """The form of a JSON document: its keys, recursively, without the values."""
    if isinstance(x, dict):
        return {k: shape(v) for k, v in x.items()}
    if isinstance(x, list):
        return [shape(x[0])] if x else []
    return None


def run_forms(runs: Path, cell: dict[str, Any]) -> Any:
    out = []
    for rid in cell["run_ids"]:
        folder = runs / rid
        result = json.loads((folder / "result.json").read_text())
        out.append((sorted(p.name for p in folder.iterdir()), sorted(result), sorted(result["summary"]),
                    sorted(result["engine"])))
    if cell["sweep_id"]:
        out.append(sorted(json.loads((runs / cell["sweep_id"] / "sweep.json").read_text())))
    return out


def test_cells_land_on_nodes_with_their_resources_and_results_match_a_local_matrix(cluster, tmp_path):
    needs = {"a-run": {"resources": {"pool_a": 1}}, "a-sweep": {"resources": {"pool_a": 1}},
             "h100": {"resources": {"pool_b": 1}, "accelerator": "H100"}, "zone-a": {"labels": {"zone": "a"}}}
    shapes = {"a-run": {"rate": 10}, "a-sweep": {"rates": [5, 10]}, "h100": {"rate": 10}, "zone-a": {"rate": 10}}
    plan = write_plan(tmp_path, [{"name": n, **shapes[n], **needs[n]} for n in needs], name="placed")
    runs = tmp_path / "ray-runs"
    res = advisor(str(plan), "--ray", cluster.address, "--out", str(runs), "--json")
    assert res.returncode == 0, res.stderr
    assert f"connected to the Ray cluster at {cluster.address}" in res.stderr
    doc = json.loads(res.stdout)
    cells = cells_of(doc)
    where = {n: cluster.name_of(c["attempts"][0]["node_id"]) for n, c in cells.items()}
    assert where["a-run"] in ("a1", "a2") and where["a-sweep"] in ("a1", "a2") and where["zone-a"] in ("a1", "a2")
    assert where["h100"] == "head"
    assert all(c["state"] == "done" and len(c["attempts"]) == 1 for c in cells.values())
    assert "started on" in res.stderr and "done in" in res.stderr and "req/s: " in res.stderr  # progress per cell

    # The same plan here (without what only the cluster has) gives results of the same form.
    plan_here = write_plan(tmp_path, [{"name": n, **shapes[n]} for n in needs], name="here")
    here = tmp_path / "local-runs"
    res_here = advisor(str(plan_here), "--out", str(here), "--json")
    assert res_here.returncode == 0, res_here.stderr
    doc_here = json.loads(res_here.stdout)
    assert shape(doc_here["cells"]) == shape(doc["cells"]) and sorted(doc_here) == sorted(doc)
    for name, cell in cells_of(doc_here).items():
        assert run_forms(here, cell) == run_forms(runs, cells[name])
    assert sorted(p.name for p in here.iterdir() if "-matrix-" not in p.name).__len__() == \
        sorted(p.name for p in runs.iterdir() if "-matrix-" not in p.name).__len__() == 6  # 5 runs + 1 sweep


def test_a_node_killed_mid_cell_is_retried_once_on_the_other_node_of_its_kind(healed, tmp_path):
    cluster = healed
    plan = write_plan(tmp_path, [{"name": "victim", "rate": 10, "duration": 10, "resources": {"pool_a": 1}}])
    runs = tmp_path / "runs"
    proc = subprocess.Popen([*CMD, str(plan), "--ray", cluster.address, "--out", str(runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    doc = wait_for(runs, lambda c: running_on(c["victim"], 1) is not None)
    first = cluster.name_of(running_on(cells_of(doc)["victim"], 1))
    time.sleep(2)
    cluster.kill(first)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    victim = cells_of(doc_of(runs))["victim"]
    a1, a2 = victim["attempts"]
    assert a1["outcome"] == "node died" and "died during the cell" in a1["error"]
    assert a2["outcome"] == "done" and victim["state"] == "done"
    second = cluster.name_of(a2["node_id"])
    assert {first, second} == {"a1", "a2"}  # the retry ran on the other pool_a node
    assert "(attempt 2)" in err


def test_a_cell_whose_node_dies_twice_fails_and_the_others_go_on(healed, tmp_path):
    cluster = healed
    plan = write_plan(tmp_path, [{"name": "victim", "rate": 10, "duration": 20, "resources": {"pool_a": 1}},
                                 {"name": "bystander", "rate": 10, "resources": {"pool_b": 1}}])
    runs = tmp_path / "runs"
    proc = subprocess.Popen([*CMD, str(plan), "--ray", cluster.address, "--out", str(runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    doc = wait_for(runs, lambda c: running_on(c["victim"], 1) is not None)
    cluster.kill(cluster.name_of(running_on(cells_of(doc)["victim"], 1)))
    doc = wait_for(runs, lambda c: running_on(c["victim"], 2) is not None)
    cluster.kill(cluster.name_of(running_on(cells_of(doc)["victim"], 2)))
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err
    doc = doc_of(runs)
    cells = cells_of(doc)
    victim = cells["victim"]
    assert victim["state"] == "failed" and [a["outcome"] for a in victim["attempts"]] == ["node died", "node died"]
    assert "died" in victim["error"] or "no alive node" in victim["error"]
    assert {cluster.name_of(a["node_id"]) for a in victim["attempts"]} == {"a1", "a2"}
    assert cells["bystander"]["state"] == "done" and doc["state"] == "failed"
    assert "1 cell(s) did not finish: victim" in err


def test_failures_on_a_node_name_what_is_missing_and_resume_skips_finished_cells(cluster, tmp_path):
    plan = write_plan(tmp_path, [{"name": "ok", "rate": 10},
                                 {"name": "no-model", "model": "/no/such/model", "resources": {"pool_a": 1}},
                                 {"name": "no-server", "engine": "openai",
                                  "options": {"url": "http://127.0.0.1:9", "launch": "no-such-server --port 9"}},
                                 {"name": "long", "rate": 10, "duration": 8, "resources": {"pool_b": 1}}])
    runs = tmp_path / "runs"
    proc = subprocess.Popen([*CMD, str(plan), "--ray", cluster.address, "--out", str(runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    wait_for(runs, lambda c: c["ok"]["state"] == "done" and running_on(c["long"], 1) is not None
             and c["no-model"]["state"] == "failed" and c["no-server"]["state"] == "failed")
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err  # 128 + SIGTERM
    doc = doc_of(runs)
    cells = cells_of(doc)
    assert doc["state"] == "interrupted" and doc["interrupted"] == ["long"] and cells["long"]["state"] == "interrupted"
    assert cells["no-model"]["error"].startswith("model /no/such/model not found on ")
    assert cluster.name_of(cells["no-model"]["attempts"][0]["node_id"]) in ("a1", "a2")
    assert cells["no-server"]["error"].startswith("server program 'no-such-server' not found on ")
    ok_runs = cells["ok"]["run_ids"]

    res = advisor("--resume", doc["matrix_id"], "--ray", cluster.address, "--out", str(runs))
    assert res.returncode == 1, res.stderr  # the two cells that cannot run here still fail
    assert "3 of 4 cells to run" in res.stderr
    cells = cells_of(doc_of(runs))
    assert cells["ok"]["run_ids"] == ok_runs and len(cells["ok"]["attempts"]) == 1  # finished: skipped
    assert cells["long"]["state"] == "done" and [a["outcome"] for a in cells["long"]["attempts"]] == ["interrupted", "done"]
    assert len(cells["no-model"]["attempts"]) == 2 and cells["no-model"]["state"] == "failed"


def test_node_wait_lets_a_cell_wait_for_a_node_an_autoscaler_adds(cluster, tmp_path):
    plan = write_plan(tmp_path, [{"name": "later", "rate": 10, "resources": {"pool_c": 1}}])
    runs = tmp_path / "runs"
    proc = subprocess.Popen([*CMD, str(plan), "--ray", cluster.address, "--node-wait", "120", "--out", str(runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    try:
        wait_for(runs, lambda c: c["later"]["state"] == "pending")
        time.sleep(2)
        assert proc.poll() is None  # no node has pool_c yet: the cell waits instead of failing
        cluster.add(NodeSpec("c1", resources={"pool_c": 1}))
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        later = cells_of(doc_of(runs))["later"]
        assert later["state"] == "done" and cluster.name_of(later["attempts"][0]["node_id"]) == "c1"
    finally:
        proc.kill()
        if "c1" in cluster.alive():
            cluster.kill("c1")


def test_bad_input_is_one_line_before_anything_runs(cluster, tmp_path):
    runs = tmp_path / "runs"
    plan = write_plan(tmp_path, [{"name": "gpu", "resources": {"GPU": 1}}, {"name": "split", "resources": {"pool_a": 1, "pool_b": 1}},
                                 {"name": "a100", "accelerator": "A100"}, {"name": "fine"}])
    res = advisor(str(plan), "--ray", cluster.address, "--out", str(runs), timeout=120)
    assert res.returncode == 2
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert lines[0].startswith("error: cell 'gpu' needs GPU: 1 but no node has it; resources there: ")
    assert "cell 'split' needs CPU: 1, pool_a: 1, pool_b: 1 on one node, but no single node has all of them" in lines[1]
    assert lines[2].startswith("error: cell 'a100' needs accelerator A100 but no node has it")
    assert len(lines) == 3 and not runs.exists()

    t0 = time.monotonic()
    res = advisor(str(plan), "--ray", "127.0.0.1:9", "--out", str(runs), timeout=60)
    assert res.returncode == 1 and time.monotonic() - t0 < 30
    assert res.stderr.strip().splitlines() == [
        "error: cannot reach a Ray cluster at 127.0.0.1:9 (Connection refused); check the address (`ray status` on "
        "the head prints it) and that this machine can reach 127.0.0.1:9"]
    res = advisor(str(plan), "--ray", "head:port", "--out", str(runs), timeout=60)
    assert res.returncode == 1 and "is not a Ray address" in res.stderr and not runs.exists()


def test_auto_joins_ray_address_or_the_running_cluster_or_starts_one(cluster, tmp_path):
    plan = write_plan(tmp_path, [{"name": "one", "rate": 10}])
    res = advisor(str(plan), "--ray", "auto", "--out", str(tmp_path / "r1"), RAY_ADDRESS=cluster.address)
    assert res.returncode == 0 and f"connected to the Ray cluster at {cluster.address} (RAY_ADDRESS)" in res.stderr
    res = advisor(str(plan), "--ray", "auto", "--out", str(tmp_path / "r2"))
    assert res.returncode == 0 and "connected to the Ray cluster running on this machine" in res.stderr
    # Ray finds running clusters by their files under its temp dir and by scanning processes: a fresh temp dir
    # and a new PID namespace hide the test cluster, as on a machine where none runs. (A new local Ray writes
    # an auth token under $HOME/.ray: a temporary HOME keeps the real one as it was.)
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as fresh:
        res = advisor(str(plan), "--ray", "auto", "--out", str(tmp_path / "r3"), RAY_TMPDIR=fresh, HOME=fresh,
                      prefix=("unshare", "--pid", "--fork", "--mount-proc"))
    assert res.returncode == 0, res.stderr
    assert "no Ray cluster in RAY_ADDRESS or running here: started a local one" in res.stderr
    assert cells_of(doc_of(tmp_path / "r3"))["one"]["state"] == "done"


def test_ray_client_address_and_ship_code(cluster, tmp_path):
    """From outside the cluster (Ray Client, as through a KubeRay port-forward), with this checkout's code."""
    plan = write_plan(tmp_path, [{"name": "one", "rates": [5, 10], "resources": {"pool_a": 1}}])
    res = advisor(str(plan), "--ray", cluster.client_address, "--ship-code", "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stderr
    one = cells_of(doc_of(tmp_path / "runs"))["one"]
    assert one["state"] == "done" and cluster.name_of(one["attempts"][0]["node_id"]) in ("a1", "a2")
    assert len(one["run_ids"]) == 2 and (tmp_path / "runs" / one["sweep_id"] / "sweep.json").is_file()
