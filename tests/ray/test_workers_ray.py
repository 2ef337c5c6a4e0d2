"""`--workers ray:N` against a real three-node cluster and the fault server (which logs what it really did).

The driver is the real `advisor bench` in a subprocess; its actors run on the cluster's nodes and send to
the fault server on 127.0.0.1. Every process here shares the machine's monotonic clock, so the server's
log is ground truth for the driver's merged records, once a worker's clock is skewed on purpose
(ADVISOR_TEST_RAY_CLOCK_SKEW adds 5 s to one actor's clock readings, as if it ran on another host).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from advisor.saved.store import load_run
from tests.faults.conftest import fault_server, write_scenario  # noqa: F401  (a fixture)

pytestmark = pytest.mark.ray
CMD = [sys.executable, "-c", "from advisor_cli import main; main()", "bench"]
SKEW_NS = 5_000_000_000


def env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, **extra}


def bench(cluster, server, tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """A real `advisor bench` of 8 req/s for 4 s (+0.5 s warm-up); on `cluster` (None: no Ray)."""
    scenario = write_scenario(tmp_path / "s.yaml", rate_rps=8.0, duration_s=4.0, warmup_s=0.5, n_out=8)
    where = ("--ray", cluster.address) if cluster is not None else ()
    return subprocess.run([*CMD, "--scenario", str(scenario), "--engine", "openai", "--url", server.url,
                           "--out", str(tmp_path / "runs"), "--json", *where, *args],
                          capture_output=True, text=True, timeout=240, env=env(**extra))


def run_of(res: subprocess.CompletedProcess[str]):
    assert res.returncode == 0, res.stderr
    return load_run(json.loads(res.stdout)["path"])


def test_ray_workers_send_what_one_process_sends_from_several_nodes(cluster, fault_server, tmp_path):  # noqa: F811
    server = fault_server(tpot_ms=2)
    two = run_of(bench(cluster, server, tmp_path, "--workers", "ray:2"))
    one = run_of(bench(None, server, tmp_path, "--workers", "1"))
    r2, r1 = two.records(), one.records()
    assert [r.request_id for r in r2] == [r.request_id for r in r1] and len(r2) >= 30
    assert all(r.ok for r in r2) and sorted({r.worker for r in r2}) == [0, 1]
    assert [r.t_sched_ns for r in r2] == [r.t_sched_ns for r in r1]
    ws = two.loadgen.workers
    assert two.loadgen.n_workers == 2 and [w["on"] for w in ws] == ["ray", "ray"]
    assert len({w["node"] for w in ws}) == 2, "SPREAD: the two actors are on two nodes"
    for w in ws:  # one machine: the real offset is 0, and it is known to within half a round trip
        assert abs(w["clock_offset_ns"]) / 1e6 <= w["clock_uncertainty_ms"] + 0.5, w
        assert w["clock_uncertainty_ms"] < 50 and w["exit"] == "done" and w["n_sent"] == w["n_requests"]
    # Sent on time. Not the verdict's own rule (at most 2 of ~32 sends past 5 ms): that p99 claim needs a quiet
    # machine, and here a 3-node cluster (GCS, 3 raylets, 2 actors) shares 2 cores with the driver and the
    # server; CI saw 2 of 32 late once in 3 runs. A worker that sent late for real (a wrong clock offset, a
    # blocked actor) is late on most sends, and fails both of these.
    lag = two.summary.lag_check
    assert lag is not None and lag.n_late <= max(3, lag.n // 8), f"send lag over the bound: {lag}"
    assert two.summary.client_queue_ms.p50 is not None and two.summary.client_queue_ms.p50 <= 2.0, \
        two.summary.client_queue_ms


def test_a_skewed_worker_clock_still_lines_up_with_the_servers_log(cluster, fault_server, tmp_path):  # noqa: F811
    server = fault_server(tpot_ms=4, tokens_per_chunk=2)
    run = run_of(bench(cluster, server, tmp_path, "--workers", "ray:2",
                       ADVISOR_TEST_RAY_CLOCK_SKEW=f"1:{SKEW_NS}"))
    ws = {w["worker"]: w for w in run.loadgen.workers}
    assert abs(ws[1]["clock_offset_ns"] - SKEW_NS) / 1e6 <= ws[1]["clock_uncertainty_ms"] + 0.5, ws[1]
    assert abs(ws[0]["clock_offset_ns"]) / 1e6 <= ws[0]["clock_uncertainty_ms"] + 0.5, ws[0]
    t0 = run.loadgen.t0_perf_counter_ns
    served = server.requests()
    recs = [r for r in run.records() if r.ok]
    assert len(recs) >= 30 and 0 <= len(served) - len(recs) <= 3  # the server also saw the driver's warm-up
    send_ms, chunk_ms, used = {0: [], 1: []}, {0: [], 1: []}, set()
    for rec in recs:
        sent = t0 + rec.t_send_ns  # the driver's clock
        k = min(range(len(served)), key=lambda i: abs(served[i]["t_recv_ns"] - sent))
        assert k not in used, "two records matched one server request"
        used.add(k)
        srv = served[k]
        send_ms[rec.worker].append((srv["t_recv_ns"] - sent) / 1e6)
        chunk_ms[rec.worker] += [(t0 + c - t) / 1e6 for c, (t, _) in zip(rec.chunk_t_ns, srv["chunks"])]
    for w in (0, 1):
        # the server receives a request after it was sent, and the client reads a chunk after it was written:
        # a few ms at most on loopback; a 5 s skew left in would put worker 1 5000 ms off
        s, c = np.array(send_ms[w]), np.array(chunk_ms[w])
        assert len(s) >= 15 and s.min() >= -1.0 and np.median(s) <= 5.0 and s.max() <= 30.0, (w, s)
        assert c.min() >= -1.0 and np.median(c) <= 5.0, (w, np.percentile(c, [0, 50, 100]))


URL = ("--engine", "openai", "--url", "http://127.0.0.1:9")


@pytest.mark.parametrize(("args", "says"), [
    ((*URL, "--workers", "ray:0"), "--workers ray:0: ray:N needs a whole number of Ray actors N >= 1, e.g. ray:4"),
    ((*URL, "--workers", "ray:x"), "--workers ray:x: ray:N needs a whole number of Ray actors N >= 1, e.g. ray:4"),
    (("--engine", "fake", "--workers", "ray:2"), "--workers ray:2: only a served engine (openai) is driven by "
                                                 "several processes; 'fake' runs in advisor"),
    ((*URL, "--workers", "ray:2", "--ray", "127.0.0.1:9"), "cannot reach a Ray cluster at 127.0.0.1:9"),
])
def test_bad_ray_workers_are_one_line_before_anything_is_measured(cluster, tmp_path, args, says):
    scenario = write_scenario(tmp_path / "s.yaml")
    res = subprocess.run([*CMD, "--scenario", str(scenario), "--out", str(tmp_path / "runs"), *args],
                         capture_output=True, text=True, timeout=120, env=env(RAY_ADDRESS=cluster.address))
    assert res.returncode != 0 and says in res.stderr, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.lower().startswith("error")]
    assert len(errors) == 1 and says in errors[0], res.stderr  # (a usage error also shows click's usage lines)
    assert not list((tmp_path / "runs").glob("*/result.json"))


def test_sigterm_stops_every_actor_and_keeps_what_was_measured(cluster, fault_server, tmp_path):  # noqa: F811
    server = fault_server(tpot_ms=2)
    scenario = write_scenario(tmp_path / "s.yaml", rate_rps=8.0, duration_s=30.0, warmup_s=0.5, n_out=8)
    proc = subprocess.Popen([*CMD, "--scenario", str(scenario), "--engine", "openai", "--url", server.url,
                             "--out", str(tmp_path / "runs"), "--json", "--ray", cluster.address, "--workers", "ray:2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    deadline = time.monotonic() + 120
    while len(server.requests()) < 12:  # the run is on: some requests were served
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 128 + signal.SIGTERM, err
    saved = list((tmp_path / "runs").glob("*/result.json"))
    assert len(saved) == 1, err
    run = load_run(saved[0].parent)
    recs = run.records()
    assert run.verdict.status == "INVALID" and "interrupted" in run.verdict.reasons[0]
    assert {r.worker for r in recs if r.ok} == {0, 1} and sum(r.ok for r in recs) >= 10
    assert all(r.ok or r.error_kind == "cancelled" for r in recs), {r.error_kind for r in recs}
    assert sum(r.error_kind == "cancelled" for r in recs) > 100  # 30 s planned: most were never sent
    time.sleep(1.0)
    import ray  # the actors are gone: the cluster's CPUs are all free again

    ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
    try:
        deadline = time.monotonic() + 30
        while ray.available_resources().get("CPU", 0) < 3 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert ray.available_resources().get("CPU", 0) == 3
    finally:
        ray.shutdown()


def test_an_actor_whose_node_dies_loses_only_its_unreturned_requests(healed, fault_server, tmp_path):  # noqa: F811
    cluster = healed
    server = fault_server(tpot_ms=2)
    scenario = write_scenario(tmp_path / "s.yaml", rate_rps=9.0, duration_s=8.0, warmup_s=0.5, n_out=8)
    proc = subprocess.Popen([*CMD, "--scenario", str(scenario), "--engine", "openai", "--url", server.url,
                             "--out", str(tmp_path / "runs"), "--json", "--ray", cluster.address, "--workers", "ray:3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    deadline = time.monotonic() + 120
    while len(server.requests()) < 15:  # one actor per node (3 CPUs, one each): a1 has one of them
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.2)
    a1 = cluster.node_id("a1")
    cluster.kill("a1")
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    run = load_run(json.loads(out)["path"])
    ws = {w["worker"]: w for w in run.loadgen.workers}
    dead = [w for w in ws.values() if w["node"] == a1]
    assert len(dead) == 1 and dead[0]["exit"].startswith("died"), ws
    recs = run.records()
    mine = [r for r in recs if r.worker == dead[0]["worker"]]
    others = [r for r in recs if r.worker != dead[0]["worker"]]
    assert all(r.ok for r in others) and len(others) >= 40
    assert any(r.ok for r in mine), "what it returned before it died is kept"
    lost = [r for r in mine if not r.ok]
    assert lost and all(r.error_kind == "worker" and "died" in (r.error or "") for r in lost)
    assert run.summary.errors_by_kind.get("worker", 0) >= 1
