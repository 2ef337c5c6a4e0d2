"""ITL, TPOT and token counts against what the server really did, for 1 to 8 tokens per chunk.

The fault server runs in its own process, streams k tokens per chunk and logs when it wrote every chunk.
A real `advisor bench` measures it; each request is matched to the server's log by its send time
(one monotonic clock for both processes) and compared chunk by chunk and by percentile. The ITL tail is
also checked at 40 and 100 req/s, where the client's event loop runs late (its reads are stamped by the
kernel, `adapters.kernel_stamps`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.metrics.per_request import itl_ms, tpot_ms
from advisor.saved.store import load_run
from tests.faults.conftest import advisor, write_scenario

pytestmark = pytest.mark.faults

TPOT_MS = 8.0


def _bench(server, model_dir, tmp_path, scenario, *opts: str) -> object:
    res = advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--model",
                  model_dir, "--out", str(tmp_path / "runs"), "--json", *opts)
    assert res.returncode == 0, res.stderr
    return load_run(json.loads(res.stdout)["path"])


def _matched(run, server, within_ms: float = 50):
    """(client record, server request) pairs, matched by send time on the shared monotonic clock: each
    record to the first request the server received after its send (within_ms) that no earlier record took."""
    t0 = run.loadgen.t0_perf_counter_ns
    served = sorted(server.requests(), key=lambda r: r["t_recv_ns"])
    pairs, used = [], set()
    for rec in sorted((r for r in run.records() if r.ok), key=lambda r: r.t_send_ns):
        sent = t0 + rec.t_send_ns
        i = next((i for i, r in enumerate(served) if i not in used and r["t_recv_ns"] >= sent), None)
        assert i is not None and served[i]["t_recv_ns"] - sent < within_ms * 1e6, "no server request near this send"
        used.add(i)
        pairs.append((rec, served[i]))
    return pairs


def _server_tpot(srv) -> float:
    """The server's own TPOT: from its first to its last chunk, per token after the first chunk."""
    (t_first, n_first), (t_last, _) = srv["chunks"][0], srv["chunks"][-1]
    return (t_last - t_first) / (sum(n for _, n in srv["chunks"]) - n_first) / 1e6


def _server_itl(srv) -> list[float]:
    chunks = srv["chunks"]
    return [(t - tp) / n / 1e6 for (tp, _), (t, n) in zip(chunks, chunks[1:]) for _ in range(n)]


@pytest.mark.parametrize(("k", "usage"), [(1, "final"), (2, "final"), (3, "final"), (4, "final"), (8, "final"),
                                          (4, "per_chunk")])
def test_itl_matches_the_servers_own_per_token_gaps(fault_server, model_dir, tmp_path, k, usage):
    server = fault_server(tokenizer=model_dir, tokens_per_chunk=k, tpot_ms=TPOT_MS, usage=usage)
    run = _bench(server, model_dir, tmp_path, write_scenario(tmp_path / "s.yaml"))
    pairs = _matched(run, server)
    assert len(pairs) >= 20
    client_itl, server_itl, gap_diff_ms, tpot_diff = [], [], [], []
    n_apart = 0  # requests whose chunks the client read one read each
    for rec, srv in pairs:
        # exact counts per chunk, whatever the source (per-chunk usage, or the tokenizer aligned at the end)
        assert rec.chunk_tokens == [n for _, n in srv["chunks"]], (rec.chunk_tokens, srv["chunks"])
        assert rec.n_out == 24 and rec.token_source == ("server_per_chunk" if usage == "per_chunk"
                                                         else "tokenizer_aligned")
        client_itl += itl_ms(rec)
        server_itl += _server_itl(srv)
        tpot_diff.append(tpot_ms(rec) / _server_tpot(srv) - 1)
        t_client = np.diff(rec.chunk_t_ns) / 1e6
        t_server = np.diff([t for t, _ in srv["chunks"]]) / 1e6
        if np.all(t_client > 0):  # a read that held two chunks stamps both with the later one's arrival: not a bias
            gap_diff_ms += list(t_client - t_server)
            n_apart += 1
    # p50 within 0.5 ms (or 3%). The p99 rests on the ~5 largest of ~500 gaps, where a single late wake-up of the
    # client moves it: CI's 2-core machine saw 0.65 ms at k=1 (13.62 against 12.97 ms), a loaded one 2.3 ms. So
    # the client's tail may be off by 5%, or by 1 ms plus the machine's own scheduling tail, measured
    # independently by the server: how late its 8 ms sleeps woke (p99; ~1 ms on a quiet machine, 5 ms in CI).
    # A wrong split of a chunk's tokens puts whole gaps in the tail (0 and 2x8 ms at k=2) and is caught by the median and bias checks below as well.
    # TPOT per request is the server's (the tokens after the first chunk over the time they took), typically to
    # 1%: a client that read the first two chunks in one go (busy) loses a gap on that request, so not each one.
    # The median is held to 2%: in a bad hour of the CI VM (2026-11-26 18:10, when the machine took 309 ms of
    # 10 s from the client's CPU: benchmarks/machine_noise.py) it was 1.07% at k=8. One token miscounted is
    # 1/(n_out - first chunk's tokens) of TPOT, 4.3-6.3% here, and the per-chunk counts are checked exactly above
    assert np.median(np.abs(tpot_diff)) <= 0.02, f"TPOT off the server's by {np.median(np.abs(tpot_diff)):.1%}"
    server_late_ms = float(np.percentile(np.array(server_itl) - TPOT_MS, 99))
    for q, tol_ms in ((50, max(0.03 * np.median(server_itl), 0.5)),
                      (99, max(0.05 * np.percentile(server_itl, 99), 1.0 + server_late_ms))):
        c, s = np.percentile(client_itl, q), np.percentile(server_itl, q)
        assert abs(c - s) <= tol_ms, (f"ITL p{q}: client {c:.3f} ms, server {s:.3f} ms (k={k}, tolerance "
                                      f"{tol_ms:.2f} ms; server wake-ups late by {server_late_ms:.2f} ms at p99)")
    # chunk by chunk: the gap between two chunks as the client saw it is the gap the server wrote them with:
    # the typical difference is small and there is no bias either way (scheduling noise is in the tails).
    # The bias bound is 0.2 ms or 1% of a chunk gap, over the requests whose chunks came one per read: where a
    # busy client read two at once, both carry the later stamp, and one such request moves the mean by more
    # (k=4 on a machine at load 11: -0.36 ms). Reads are stamped by the kernel, so the client's wake-up
    # delays are not in the gaps.
    assert n_apart >= 0.75 * len(pairs), f"only {n_apart} of {len(pairs)} requests read one chunk per read"
    assert np.median(np.abs(gap_diff_ms)) <= max(0.03 * k * TPOT_MS, 0.5)
    bias = np.mean(gap_diff_ms)
    assert abs(bias) <= max(0.2, 0.01 * k * TPOT_MS), f"client gaps biased by {bias:.3f} ms (k={k})"
    assert run.summary.token_sources == {("server_per_chunk" if usage == "per_chunk" else "tokenizer_aligned"):
                                            run.summary.n_ok}


def test_without_a_tokenizer_the_final_total_is_spread_by_text_length(fault_server, tmp_path):
    server = fault_server(tokens_per_chunk=4, tpot_ms=TPOT_MS, usage="final")
    res = advisor("bench", "--scenario", str(write_scenario(tmp_path / "s.yaml", duration_s=3.0)), "--engine",
                  "openai", "--url", server.url, "--out", str(tmp_path / "runs"), "--json")
    assert res.returncode == 0, res.stderr
    run = load_run(json.loads(res.stdout)["path"])
    for rec in (r for r in run.records() if r.ok):
        assert sum(rec.chunk_tokens) == rec.n_out == 24 and min(rec.chunk_tokens) >= 0
        assert max(rec.chunk_tokens) <= 6  # the residual is spread, never dumped on one chunk
        assert rec.token_source == "text_proportional"


@pytest.mark.parametrize("k", [1, 4, 8])
def test_tpot_matches_the_servers_per_token_time(fault_server, model_dir, tmp_path, k):
    """256 in, 64 out, TTFT 40 ms, 8 ms per token, k tokens per chunk: TPOT leaves the first chunk's k tokens
    out, as the server spent no decode time between chunks on them; the (n_out - 1) form stays beside it,
    short by (64 - k) / 63 (-4.8% at k=4, -11.1% at k=8, what TPOT itself was before)."""
    server = fault_server(tokenizer=model_dir, tokens_per_chunk=k, tpot_ms=TPOT_MS, ttft_ms=40, usage="final")
    scenario = write_scenario(tmp_path / "s.yaml", n_in=256, n_out=64, duration_s=4.0)
    run = _bench(server, model_dir, tmp_path, scenario)
    pairs = _matched(run, server)
    assert len(pairs) >= 12
    client = np.array([tpot_ms(rec) for rec, _ in pairs])
    server_tpot = np.array([_server_tpot(srv) for _, srv in pairs])
    # per request, the client's TPOT is the server's to within 1% (both ends are single chunk arrivals)
    assert np.median(np.abs(client / server_tpot - 1)) <= 0.01, (client[:5], server_tpot[:5])
    c50, s50 = np.median(client), np.median(server_tpot)
    assert abs(c50 / s50 - 1) <= 0.01, f"TPOT p50: client {c50:.3f} ms, server {s50:.3f} ms (k={k})"
    measured = [rec for rec, _ in pairs if not rec.warmup]
    assert len(measured) == run.summary.n_ok  # the run's own summary: the same figure over its measured requests
    assert run.summary.tpot_ms.p50 == pytest.approx(np.median([tpot_ms(r) for r in measured]), rel=1e-9)
    # the (n_out - 1) form: short by (64 - k) / 63, request by request
    assert run.summary.tpot_n_minus_1_ms.p50 == pytest.approx(run.summary.tpot_ms.p50 * (64 - k) / 63, rel=1e-9)


@pytest.mark.parametrize("rate_rps", [40, 100])
def test_itl_tail_matches_the_server_while_the_client_is_busy(fault_server, model_dir, tmp_path, rate_rps):
    """1 token per chunk, 256 in, 64 out, TTFT 40 ms, 8 ms per token, at 40 and 100 req/s: ~22 and ~55 streams
    at once on a 2-core machine, the server beside the client. Stamped when the loop ran each read, the ITL
    p99 was +9-10% (40 req/s, 2026-11-26 on this machine) and +13.9% (100 req/s, the issue's machine) above the
    server's; stamped by the kernel, +0.1-0.2% and +1.1%.

    What kernel stamps cannot undo: a client that did not read for a whole token gap gets two chunks in one
    read, and both carry the later one's stamp. A miss is skipped, with its figures, where the machine was
    overloaded (the server's own ITL p50 over twice its 8 ms, or over 2% of the client's chunks read two at
    a time): the premise, a client late by less than a gap, does not hold there. Runs at 100 req/s on
    2026-11-26 with the server at 18-100 ms per token: p99 +1.1%, +1.3%, +7.1% (3.0% of chunks two at a
    time), +36% (6.9%)."""
    server = fault_server(tokenizer=model_dir, tokens_per_chunk=1, tpot_ms=TPOT_MS, ttft_ms=40, usage="final")
    scenario = write_scenario(tmp_path / "s.yaml", rate_rps=rate_rps, n_in=256, n_out=64, duration_s=4.0)
    run = _bench(server, model_dir, tmp_path, scenario)
    assert run.engine.extra["arrival_clock"] == "kernel"
    pairs = _matched(run, server, within_ms=1000)  # a server this busy may take its time to read a request
    assert len(pairs) >= 0.9 * rate_rps * 5  # warm-up and measured requests, all served
    client_itl = [v for rec, _ in pairs for v in itl_ms(rec)]
    server_itl = [v for _, srv in pairs for v in _server_itl(srv)]
    assert len(client_itl) == len(server_itl) == 63 * len(pairs)
    figures = {q: (np.percentile(client_itl, q), np.percentile(server_itl, q)) for q in (50, 99)}
    shared = np.mean([a == b for rec, _ in pairs for a, b in zip(rec.chunk_t_ns, rec.chunk_t_ns[1:])])
    overloaded = shared > 0.02 or figures[50][1] > 2 * TPOT_MS
    for q, rel in ((50, 0.03), (99, 0.05)):
        c, s = figures[q]
        if abs(c / s - 1) > rel and overloaded:
            pytest.skip(f"ITL p{q} client {c:.2f} ms, server {s:.2f} ms, on an overloaded machine: the server's own "
                        f"ITL p50 {figures[50][1]:.1f} ms for {TPOT_MS:g}, {shared:.1%} of the client's chunks read "
                        "together with the one before")
        assert abs(c / s - 1) <= rel, (f"ITL p{q} at {rate_rps} req/s: client {c:.3f} ms, server {s:.3f} ms "
                                       f"({shared:.2%} of chunks read with the one before)")
