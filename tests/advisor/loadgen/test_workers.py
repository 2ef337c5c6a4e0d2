"""`--workers`: one schedule sharded over processes gives the records one process would have written."""

from __future__ import annotations

from dataclasses import replace

import pytest
from click.testing import CliRunner

from advisor.loadgen import workers
from advisor.metrics.lag import LagCheck, held
from advisor.run.bench import BenchConfig, BenchError, bench_once, plan
from advisor.saved.store import load_run
from advisor_cli import cli
from scenarios.types import Schedule, ScheduledRequest, SLOs
from tests.servers.mock_openai import MockOpenAIServer


def _schedule(n: int, mode: str = "open", concurrency: int | None = None) -> Schedule:
    # out of schedule order on purpose: sharding follows send time, not position
    reqs = tuple(ScheduledRequest(idx=i, t_sched_s=(n - i) * 0.01, n_in=4, n_out=4) for i in range(n))
    return Schedule(scenario="s", mode=mode, requests=reqs, seed=0, slos=SLOs(), concurrency=concurrency)


def test_requests_are_dealt_round_robin_in_send_order_and_keep_their_indices():
    parts = workers.shard(_schedule(7), 3)
    send_order = [6, 5, 4, 3, 2, 1, 0]
    for w, part in enumerate(parts):
        assert {r.idx for r in part.requests} == set(send_order[w::3])
        assert [r.idx for r in part.requests] == sorted(r.idx for r in part.requests)  # schedule order kept
    assert sorted(r.idx for p in parts for r in p.requests) == list(range(7))


def test_a_session_is_never_split(monkeypatch):
    monkeypatch.setattr(workers, "shard_key", lambda r: r.idx // 3)  # sessions of three turns
    parts = workers.shard(_schedule(9), 2)
    for part in parts:
        sessions = {r.idx // 3 for r in part.requests}
        assert all(sum(1 for r in part.requests if r.idx // 3 == s) == 3 for s in sessions)


def test_closed_loop_users_are_dealt_out_and_never_more_workers_than_work():
    parts = workers.shard(_schedule(10, "closed", concurrency=5), 2)
    assert [p.concurrency for p in parts] == [3, 2]
    assert workers.count(8, served=True, placement={}, schedule=_schedule(3)) == 3
    assert workers.count(4, served=True, placement={}, schedule=_schedule(10, "closed", concurrency=2)) == 2
    assert workers.count("auto", served=False, placement={}, schedule=_schedule(10)) == 1


def _constant(rate_rps: float, duration_s: float) -> Schedule:
    n = int(rate_rps * duration_s)
    reqs = tuple(ScheduledRequest(idx=i, t_sched_s=i / rate_rps, n_in=4, n_out=4) for i in range(n))
    return Schedule(scenario="s", mode="open", requests=reqs, seed=0, slos=SLOs())


def test_peak_rate_is_the_busiest_second():
    assert workers.peak_rps(_constant(4, 10)) == 4
    burst = replace(_constant(4, 10), requests=_constant(4, 10).requests + tuple(
        ScheduledRequest(idx=40 + i, t_sched_s=5 + i / 1000, n_in=4, n_out=4) for i in range(100)))
    assert workers.peak_rps(burst) == 104  # 100 in a tenth of a second, on top of the steady 4


def test_auto_is_one_worker_while_one_process_has_room_and_one_per_cpu_beyond(monkeypatch):
    monkeypatch.setattr(workers, "available_cpus", lambda: [0, 1, 2, 3])
    limit = workers.AUTO_ONE_WORKER_PEAK_RPS
    assert workers.count("auto", served=True, placement={}, schedule=_constant(4, 10)) == 1
    assert workers.count("auto", served=True, placement={}, schedule=_constant(limit, 3)) == 1
    assert workers.count("auto", served=True, placement={}, schedule=_constant(limit * 1.5, 3)) == 4
    assert workers.count("auto", served=True, placement={"engine_cpus": [3]}, schedule=_constant(limit * 2, 3)) == 3
    assert workers.count(2, served=True, placement={}, schedule=_constant(4, 10)) == 2  # asked for: given
    # a closed loop's rate is whatever the server allows: one per CPU, as many as its users
    assert workers.count("auto", served=True, placement={}, schedule=_schedule(10, "closed", concurrency=8)) == 4


def test_a_schedulers_cpu_grant_caps_auto_and_keeps_its_light_load_rule(monkeypatch):
    monkeypatch.setattr(workers, "available_cpus", lambda: [0, 1, 2, 3])  # a Ray task sees the whole node
    limit = workers.AUTO_ONE_WORKER_PEAK_RPS
    heavy, light = _constant(limit * 2, 3), _constant(4, 10)
    assert workers.count("auto", served=True, placement={}, schedule=heavy, auto_cap=2) == 2
    assert workers.count("auto", served=True, placement={}, schedule=heavy, auto_cap=8) == 4  # not past the CPUs
    assert workers.count("auto", served=True, placement={}, schedule=light, auto_cap=3) == 1  # light: one, as here
    assert workers.count(3, served=True, placement={}, schedule=heavy, auto_cap=1) == 3  # asked for: given
    assert workers.count("auto", served=False, placement={}, schedule=heavy, auto_cap=4) == 1  # in-process: one


def test_held_needs_the_rate_no_errors_and_the_lag_rule():
    ok = LagCheck(limit_ms=5.0, n=1000, n_late=3, critical=16, ok=True)
    late = replace(ok, n_late=40, ok=False)
    assert held(2000, 1950, 0, ok)
    assert not held(2000, 1850, 0, ok)  # under 95% of the target
    assert not held(2000, 2000, 1, ok)
    assert not held(2000, 2000, 0, late)
    assert not held(2000, 2000, 0, None)


def _scenario(tmp_path, rate_rps: float = 25.0, duration_s: float = 3.0):
    path = tmp_path / "w.yaml"
    path.write_text(f"""name: workers
description: Equal requests at a constant rate, for the worker tests.
workload:
  input: {{dist: fixed, value: 12}}
  output: {{dist: fixed, value: 6}}
arrival: {{process: constant, rate_rps: {rate_rps}}}
duration_s: {duration_s}
warmup_s: 0.5
slos: {{}}
""")
    return str(path)


def test_merged_worker_records_equal_one_process_records(tmp_path):
    with MockOpenAIServer() as server:
        cfg = BenchConfig(scenario=_scenario(tmp_path), engine="openai", engine_options={"url": server.url},
                          out_dir=tmp_path / "runs", workers=1)
        one = bench_once(cfg)
        sent_one = [tuple(r["body"]["prompt"]) for r in server.requests if len(r["body"]["prompt"]) == 12]
        server.requests.clear()
        two = bench_once(replace(cfg, workers=2))
        sent_two = [tuple(r["body"]["prompt"]) for r in server.requests if len(r["body"]["prompt"]) == 12]
    assert two.loadgen.n_workers == 2 and one.loadgen.n_workers == 1
    assert sorted(sent_one) == sorted(sent_two) and len(set(sent_one)) > 80  # the same requests (not the warm-ups)
    a, b = one.records(), two.records()
    assert len(a) == len(b) > 80
    fields = ("idx", "request_id", "t_sched_ns", "n_in", "n_in_client", "n_out", "n_out_client", "chunk_tokens",
              "max_tokens", "warmup", "token_source", "error_kind")
    for x, y in zip(a, b):
        assert [getattr(x, f) for f in fields] == [getattr(y, f) for f in fields]
        assert x.worker == 0 and y.ok and len(y.chunk_t_ns) == len(x.chunk_t_ns)
    send_order = sorted(b, key=lambda r: (r.t_sched_ns, r.idx))
    assert [r.worker for r in send_order] == [k % 2 for k in range(len(b))]  # dealt round-robin
    for run in (one, two):
        # one clock, one start: never early, on time at the median (a shared test machine may delay a few sends)
        lags_ms = [(r.t_send_ns - r.t_sched_ns) / 1e6 for r in run.records() if not r.warmup]
        assert min(lags_ms) >= 0 and sorted(lags_ms)[len(lags_ms) // 2] < 5.0, lags_ms
        for w in run.loadgen.workers:
            assert w["exit"] == "done" and w["cpu_s"] > 0 and w["lag_p99_ms"] is not None


def test_an_auto_cap_that_is_not_a_whole_number_of_workers_is_refused(tmp_path):
    for bad in (0, 1.5, True):
        with pytest.raises(BenchError, match="auto_workers_cap must be a whole number >= 1"):
            BenchConfig(scenario="chat", engine="fake", out_dir=tmp_path, auto_workers_cap=bad)


def test_more_workers_than_one_for_an_in_process_engine_is_refused(tmp_path):
    with pytest.raises(BenchError, match="--workers 2: only a served engine"):
        plan(BenchConfig(scenario="chat", engine="fake", out_dir=tmp_path, workers=2))
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", "--engine", "fake", "--workers", "0",
                                   "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--workers must be 'auto', an integer >= 1 or ray:N (N Ray actors), got '0'" in res.output


def test_repeats_and_workers_compose_and_a_resumed_sweep_refuses_new_load_settings(tmp_path):
    with MockOpenAIServer() as server:
        res = CliRunner().invoke(cli, ["bench", "--scenario", _scenario(tmp_path, rate_rps=20.0, duration_s=1.0),
                                       "--engine", "openai", "--url", server.url, "--workers", "2", "--repeats", "2",
                                       "--out", str(tmp_path / "runs"), "--json"])
    assert res.exit_code == 0, res.output
    runs = [load_run(p) for p in sorted((tmp_path / "runs").iterdir()) if (p / "result.json").exists()]
    assert len(runs) == 2 and all(r.loadgen.n_workers == 2 for r in runs)
    for flag in (["--workers", "1"], ["--repeats", "2"], ["--restart-engine"]):
        res = CliRunner().invoke(cli, ["sweep", "--resume", "20261122-101500-sweep-x", *flag, "--out", str(tmp_path)])
        assert res.exit_code == 2 and f"--resume takes every setting from the saved sweep; drop {flag[0]}" \
            in res.output, res.output


def test_sessions_are_dealt_whole_and_send_what_one_process_sends(tmp_path):
    """Closed-loop conversations over HTTP: each session on one worker, turn k holding turn k-1, same prompts."""
    sc_file = tmp_path / "conv.yaml"
    sc_file.write_text(
        "name: conv\ndescription: multi-turn conversations for the worker test, closed loop\n"
        "workload:\n  input: {dist: fixed, value: 12}\n  output: {dist: fixed, value: 4}\n"
        "sessions: {users: 4, sessions_per_user: 3, turns: {dist: uniform, min: 1, max: 4}, think_s: 0.01}\n"
        "duration_s: 3\nwarmup_s: 0.5\n")
    sched = plan(BenchConfig(str(sc_file), engine="openai", engine_options={"url": "http://127.0.0.1:9"})).schedule
    parts = workers.shard(sched, 2)
    assert [p.sessions.users for p in parts] == [2, 2]
    assert sum(p.sessions.n_sessions for p in parts) == sched.sessions.n_sessions == 12
    assert not {r.session_id for r in parts[0].requests} & {r.session_id for r in parts[1].requests}
    sent = []
    with MockOpenAIServer() as server:
        cfg = BenchConfig(scenario=str(sc_file), engine="openai", engine_options={"url": server.url},
                          out_dir=tmp_path / "runs", workers=1)
        for n in (1, 2):
            server.requests.clear()
            run = bench_once(replace(cfg, workers=n))
            sent.append(sorted(tuple(r["body"]["prompt"]) for r in server.requests if r["body"].get("user")))
            recs = run.records()
            assert run.loadgen.n_workers == n and all(r.ok for r in recs) and len(recs) == len(sched.requests)
            for sid in {r.session_id for r in recs}:
                turns = sorted((r for r in recs if r.session_id == sid), key=lambda r: r.turn)
                assert len({r.worker for r in turns}) == 1  # a session never split
                assert [r.turn for r in turns] == list(range(len(turns)))
    assert sent[0] == sent[1] and len(sent[0]) == len(sched.requests)
    by_prompt = set(sent[1])
    # turn k's prompt starts with turn k-1's whole prompt (then its answer and the new message)
    assert any(len(p) > 12 and any(q == p[:len(q)] for q in by_prompt if len(q) < len(p)) for p in by_prompt)


def test_more_local_workers_than_cpus_is_refused_before_anything_starts(tmp_path, monkeypatch):
    """`--workers 1000` on a 2-CPU machine started ~50 processes (2.6 GB); now one usage error, exit 2."""
    import adapters.placement
    from advisor.run import bench

    monkeypatch.setattr(adapters.placement, "available_cpus", lambda: (0, 1))
    monkeypatch.setattr(bench, "available_cpus", lambda: (0, 1))
    res = CliRunner().invoke(cli, ["bench", "--scenario", "chat", "--engine", "openai", "--url", "http://127.0.0.1:9",
                                   "--workers", "1000", "--out", str(tmp_path / "runs")])
    errors = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert res.exit_code == 2 and len(errors) == 1, res.output
    assert "--workers 1000: at most 2 here, one per CPU" in errors[0]
    assert not (tmp_path / "runs").exists()
    with pytest.raises(BenchError, match="--workers 3: at most 2 here"):  # a resumed sweep or a matrix cell
        plan(BenchConfig(scenario="chat", engine="openai", engine_options={"url": "http://127.0.0.1:9"},
                         out_dir=tmp_path, workers=3))
    plan(BenchConfig(scenario="chat", engine="openai", engine_options={"url": "http://127.0.0.1:9"},
                     out_dir=tmp_path, workers=2))


def test_a_cancel_while_workers_start_returns_at_once_with_nothing_sent(monkeypatch):
    """Ctrl-C while the workers start: no wait for the rest to start or attach, every process ended, all cancelled."""
    import asyncio
    import socket
    import subprocess
    import time
    from multiprocessing.connection import Connection

    procs, peers = [], []

    def slow_start():  # a worker that never says ready, and takes a while to start
        time.sleep(0.1)
        mine, theirs = socket.socketpair()
        peers.append(theirs)
        procs.append(subprocess.Popen(["sleep", "60"], process_group=0))
        return procs[-1], Connection(mine.detach())

    monkeypatch.setattr(workers, "start_worker", slow_start)

    async def main():
        task = asyncio.create_task(workers.drive_workers(None, _schedule(40), 8, timeout_s=5, max_run_s=None))
        await asyncio.sleep(0.35)
        t = time.monotonic()
        task.cancel()
        return await task, time.monotonic() - t

    try:
        result, took_s = asyncio.run(main())
    finally:
        for s in peers:
            s.close()
    assert result.interrupted == "interrupted" and took_s < 2.0, took_s
    assert 1 <= len(procs) < 8  # the cancel came while they were starting, and stopped the starting
    assert all(p.poll() is not None for p in procs)
    assert {r.error_kind for r in result.records} == {"cancelled"} and len(result.records) == 40
