"""ITL and token counts against what the server really did, for 1 to 8 tokens per chunk.

The fault server runs in its own process, streams k tokens per chunk and logs when it wrote every chunk.
A real `advisor bench` measures it; each request is matched to the server's log by its send time
(one monotonic clock for both processes) and compared chunk by chunk and by percentile.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from advisor.metrics.per_request import itl_ms
from advisor.store import load_run
from tests.faults.conftest import advisor, write_scenario

pytestmark = pytest.mark.faults

TPOT_MS = 8.0


def _bench(server, model_dir, tmp_path, scenario) -> object:
    res = advisor("bench", "--scenario", str(scenario), "--engine", "openai", "--url", server.url, "--model",
                  model_dir, "--out", str(tmp_path / "runs"), "--json")
    assert res.returncode == 0, res.stderr
    return load_run(json.loads(res.stdout)["path"])


def _matched(run, server):
    """(client record, server request) pairs, matched by send time on the shared monotonic clock."""
    t0 = run.loadgen.t0_perf_counter_ns
    served = sorted(server.requests(), key=lambda r: r["t_recv_ns"])
    pairs = []
    for rec in run.records():
        if not rec.ok:
            continue
        sent = t0 + rec.t_send_ns
        srv = min(served, key=lambda r: abs(r["t_recv_ns"] - sent))
        assert 0 <= srv["t_recv_ns"] - sent < 50e6, "no server request near this send"
        pairs.append((rec, srv))
    return pairs


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
    client_itl, server_itl, gap_diff_ms = [], [], []
    for rec, srv in pairs:
        # exact counts per chunk, whatever the source (per-chunk usage, or the tokenizer aligned at the end)
        assert rec.chunk_tokens == [n for _, n in srv["chunks"]], (rec.chunk_tokens, srv["chunks"])
        assert rec.n_out == 24 and rec.token_source == ("server_per_chunk" if usage == "per_chunk"
                                                         else "tokenizer_aligned")
        client_itl += itl_ms(rec)
        server_itl += _server_itl(srv)
        t_client = np.diff(rec.chunk_t_ns) / 1e6
        t_server = np.diff([t for t, _ in srv["chunks"]]) / 1e6
        gap_diff_ms += list(t_client - t_server)
    # p50 within 0.5 ms (or 3%). The p99 rests on the ~5 largest of ~500 gaps, where a single late wake-up of the
    # client moves it: CI's 2-core machine saw 0.65 ms at k=1 (13.62 against 12.97 ms), a loaded one 2.3 ms. So
    # the client's tail may be off by 5%, or by 1 ms plus the machine's own scheduling tail, measured
    # independently by the server: how late its 8 ms sleeps woke (p99; ~1 ms on a quiet machine, 5 ms in CI).
    # A wrong split of a chunk's tokens puts whole gaps in the tail (0 and 2x8 ms at k=2) and is caught by the median and bias checks below as well.
    server_late_ms = float(np.percentile(np.array(server_itl) - TPOT_MS, 99))
    for q, tol_ms in ((50, max(0.03 * np.median(server_itl), 0.5)),
                      (99, max(0.05 * np.percentile(server_itl, 99), 1.0 + server_late_ms))):
        c, s = np.percentile(client_itl, q), np.percentile(server_itl, q)
        assert abs(c - s) <= tol_ms, (f"ITL p{q}: client {c:.3f} ms, server {s:.3f} ms (k={k}, tolerance "
                                      f"{tol_ms:.2f} ms; server wake-ups late by {server_late_ms:.2f} ms at p99)")
    # chunk by chunk: the gap between two chunks as the client saw it is the gap the server wrote them with:
    # the typical difference is small and there is no bias either way (scheduling noise is in the tails).
    # The bias bound is 0.2 ms or 1% of a chunk gap: on a loaded 2-core machine a wake-up after the
    # last chunk (the one that ends the stream) runs ~0.3 ms later than after the first, on a 64 ms gap at k=8.
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
