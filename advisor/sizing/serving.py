"""Continuous batching with chunked prefill, in steady state, from one step's time.

With `n` sequences decoding together, each step adds one token to each; prompts arrive at the rate
requests finish and are prefilled in chunks of at most the engine's token budget, inside the decode
steps (a "mixed" step). On average a step carries n x isl / osl prompt tokens, so a share `phi` of the
steps are mixed, and:

    TPOT  = (1 - phi) x t_decode + phi x t_mixed
    TTFT  = t_overhead + half a step + the steps until its wave of prompts has its first tokens
    rate  = n / (TTFT + (osl - 1) x TPOT)            (Little's law)

where t = the step's GPU time from step.py (the tables as measured) + host_ms. Requests beyond what the KV cache
holds wait for a slot, which adds to TTFT only. Prompts do not arrive evenly: requests of one length
that start together finish together, so new prompts come in waves of 1 + sync x (n - 1), prefilled
together (`latencies`).
The engine constants (`EngineProfile`) are fitted on
public end-to-end measurements (backtest.py), never on the GPU being predicted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.sizing.step import Ops, Parallel, step_parts


@dataclass(frozen=True)
class EngineProfile:
    """What an engine adds to the GPU's time, and how it schedules (fitted or stated; see backtest.py)."""

    name: str
    token_budget: int  # prompt + decode tokens per step (vLLM max_num_batched_tokens, TRT-LLM max_num_tokens)
    max_batch: int  # sequences per step at most (vLLM max_num_seqs, TRT-LLM max_batch_size)
    host_ms: float = 0.0  # per step, not hidden behind the GPU
    ttft_ms: float = 0.0  # per request: tokenising, scheduling, the first token's way out
    sync: float = 0.0  # share of the other in-flight requests whose prompts arrive in the same wave
    prefill_scale: float = 1.0  # on the wave's time to first token (prefill efficiency under the engine)
    host_floor_ms: float = 0.0  # a host-bound engine: no step is shorter than this, whatever the GPU
    host_ms_per_seq: float = 0.0  # ... plus this per sequence in the step
    host_ms_per_prompt_token: float = 0.0  # ... plus this per prompt token in the step


@dataclass(frozen=True)
class Serving:
    """Steady state at `concurrency` requests in flight (latencies in ms, rates per second, whole TP group)."""

    concurrency: float
    running: float  # sequences decoding together (the KV cache may hold fewer than are in flight)
    ttft_ms: float
    tpot_ms: float
    itl_p99_ms: float  # a decode step that carries a prompt chunk
    requests_per_s: float
    output_tok_s: float
    total_tok_s: float
    mixed_share: float  # share of steps that carry a prompt chunk


@dataclass(frozen=True)
class Terms:
    """The table-derived parts of a steady state, before the engine's constants (cheap to re-combine)."""

    concurrency: float
    running: float
    osl: int
    isl: int
    budget: int  # prompt tokens a step may carry next to its decodes
    decode_ms: float  # GPU time of a decode-only step
    mixed_ms: float  # GPU time of the average step that carries prompt tokens (TPOT's)
    mixed_share: float  # share of steps that carry prompt tokens
    one_ms: float  # GPU time of a step with one prompt's first chunk, min(isl, budget) tokens
    full_ms: float  # GPU time of a step whose prompt tokens fill the budget
    mixed_tokens: float  # prompt tokens in each of those steps (a host-bound engine's host time grows with them)
    one_tokens: float
    full_tokens: float


def terms(ops: Ops, p: Parallel, e: EngineProfile, isl: int, osl: int, concurrency: float,
          max_sequences: int) -> Terms:
    """The step times a closed loop of `concurrency` requests (isl in, osl out) runs on."""
    n = max(1.0, min(concurrency, float(max_sequences), float(e.max_batch)))
    context = isl + osl / 2.0
    prompt_per_step = n * isl / max(osl, 1)
    budget = max(1, e.token_budget - int(n))
    chunk = float(min(isl, budget))
    if prompt_per_step > chunk:  # several prompts per step: as many as arrive, up to the budget
        q = min(float(budget), prompt_per_step)
        prefill, chunk_len, past, phi = (q / isl if q >= isl else 1.0), float(min(isl, q)), 0.0, 1.0
    else:
        prefill, chunk_len, past, phi = 1.0, chunk, (isl - chunk) / 2.0, prompt_per_step / chunk
    others = max(n - 1.0, 0.0)

    def gpu(**kw: float) -> float:
        return step_parts(ops, p, decode=others, context=context, **kw).total_ms
    full = max(budget / isl, 1.0)
    return Terms(concurrency, n, osl, isl, budget, step_parts(ops, p, decode=n, context=context).total_ms,
                 gpu(prefill=prefill, chunk=chunk_len, past=past), phi, gpu(prefill=1.0, chunk=chunk),
                 gpu(prefill=full, chunk=chunk), prefill * chunk_len, chunk, full * chunk)


def latencies(t: dict, host_ms: Any, ttft_ms: Any = 0.0, sync: Any = 0.0, prefill_scale: Any = 1.0,
              floor_ms: float = 0.0, per_seq: float = 0.0, per_token: float = 0.0) -> tuple[Any, Any, Any, Any]:
    """TTFT, TPOT, requests/s and the slowest step (ms, ms, 1/s, ms) from terms `t` (a Terms' fields as numbers
    or numpy arrays) and the engine constants (numbers or arrays that broadcast): the one formula the
    estimate and the fit share. A host-bound engine's step takes at least floor_ms + per_seq x running +
    per_token x its prompt tokens, overlapped with the GPU's time.

    A wave of W = 1 + sync x (running - 1) prompts arrives together; it needs k = ceil(W x isl / budget) steps,
    and its average prompt has its first token after (k + k1) / 2 of them (k1: one prompt's own chunks); a
    wave that fits one step waits for that one step, whose time grows with its prompt tokens between a step
    with one prompt and a full one."""
    tokens = {"decode_ms": 0.0, "mixed_ms": t["mixed_tokens"], "one_ms": t["one_tokens"], "full_ms": t["full_tokens"]}
    floor = floor_ms + per_seq * t["running"]
    step = {k: np.maximum(t[k] + host_ms, floor + per_token * q) for k, q in tokens.items()}
    tpot = (1.0 - t["mixed_share"]) * step["decode_ms"] + t["mixed_share"] * step["mixed_ms"]
    isl, budget = t["isl"], t["budget"]
    q1 = np.minimum(isl, budget)
    wave = (1.0 + sync * np.maximum(t["running"] - 1.0, 0.0)) * isl
    k, k1 = np.ceil(wave / budget - 1e-9), np.ceil(isl / budget - 1e-9)
    span = np.maximum(budget - q1, 1.0)
    one_step = step["one_ms"] + np.clip(wave - q1, 0.0, None) / span * (step["full_ms"] - step["one_ms"])
    first = np.where(k <= 1, one_step, (k + k1) / 2.0 * step["full_ms"])
    ttft = ttft_ms + prefill_scale * first + tpot / 2.0
    rate = t["running"] / ((ttft + np.maximum(t["osl"] - 1, 0) * tpot) / 1000.0)
    # requests the KV cache cannot hold wait for a free slot: a whole request's time per `running` ahead
    ttft = ttft + np.maximum(t["concurrency"] - t["running"], 0.0) / rate * 1000.0
    return ttft, tpot, rate, np.maximum(step["mixed_ms"], step["decode_ms"])


def combine(t: Terms, e: EngineProfile) -> Serving:
    """The steady state of `t` on engine `e` (see the module docstring)."""
    ttft, tpot, rate, slowest = (float(x) for x in latencies(
        vars(t), e.host_ms, e.ttft_ms, e.sync, e.prefill_scale, e.host_floor_ms, e.host_ms_per_seq,
        e.host_ms_per_prompt_token))
    return Serving(concurrency=t.concurrency, running=t.running, ttft_ms=ttft, tpot_ms=tpot, itl_p99_ms=slowest,
                   requests_per_s=rate, output_tok_s=rate * t.osl, total_tok_s=rate * (t.isl + t.osl),
                   mixed_share=t.mixed_share)


def steady_state(ops: Ops, p: Parallel, e: EngineProfile, isl: int, osl: int, concurrency: float,
                 max_sequences: int) -> Serving:
    """Closed loop: `concurrency` requests always in flight, each isl prompt tokens and osl output tokens."""
    return combine(terms(ops, p, e, isl, osl, concurrency, max_sequences), e)
