"""Continuous batching with chunked prefill, in steady state, from one step's time.

With `n` sequences decoding together, each step adds one token to each; prompts arrive at the rate
requests finish and are prefilled in chunks of at most the engine's token budget, inside the decode
steps (a "mixed" step). On average a step carries n x isl / osl prompt tokens, so a share `phi` of the
steps are mixed, and:

    TPOT  = (1 - phi) x t_decode + phi x t_mixed
    TTFT  = t_overhead + chunks x t_mixed + half a step + the prompts ahead of it in its wave
    rate  = n / (TTFT + (osl - 1) x TPOT)            (Little's law)

where t = gpu_scale x (the step's GPU time from step.py) + host_ms. Requests beyond what the KV cache
holds wait for a slot, which adds to TTFT only. Prompts do not arrive evenly: requests of one length
that start together finish together, so new prompts come in waves, and a prompt waits behind a share
`sync` of the (concurrency - 1) / 2 prompts that arrived with it, each taking isl / budget of a full step.
The engine constants (`EngineProfile`) are fitted on
public end-to-end measurements (backtest.py), never on the GPU being predicted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.sizing.step import Ops, Parallel, step_parts


@dataclass(frozen=True)
class EngineProfile:
    """What an engine adds to the GPU's time, and how it schedules (fitted or stated; see backtest.py)."""

    name: str
    token_budget: int  # prompt + decode tokens per step (vLLM max_num_batched_tokens, TRT-LLM max_num_tokens)
    max_batch: int  # sequences per step at most (vLLM max_num_seqs, TRT-LLM max_batch_size)
    gpu_scale: float = 1.0  # measured step / table step
    host_ms: float = 0.0  # per step, not hidden behind the GPU
    ttft_ms: float = 0.0  # per request: tokenising, scheduling, the first token's way out
    sync: float = 0.0  # share of the other in-flight requests whose prompts arrive in the same wave
    host_floor_ms: float = 0.0  # a host-bound engine: no step is shorter than this, whatever the GPU
    host_ms_per_seq: float = 0.0  # ... plus this per sequence in the step


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
    decode_ms: float  # GPU time of a decode-only step
    mixed_ms: float  # GPU time of a step that carries a prompt chunk
    full_ms: float  # GPU time of a step whose prompt tokens fill the budget
    mixed_share: float
    chunks: int  # steps one prompt's prefill takes
    ahead_steps: float  # full steps of prompts ahead in the wave, per unit of `sync`


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
    decode_ms = step_parts(ops, p, decode=n, context=context).total_ms
    mixed_ms = step_parts(ops, p, decode=others, context=context, prefill=prefill, chunk=chunk_len,
                          past=past).total_ms
    full_ms = step_parts(ops, p, decode=others, context=context, prefill=max(budget / isl, 1.0),
                         chunk=chunk, past=0.0).total_ms
    return Terms(concurrency, n, osl, isl, decode_ms, mixed_ms, full_ms, phi, math.ceil(isl / chunk),
                 others / 2.0 * isl / budget)


def combine(t: Terms, e: EngineProfile) -> Serving:
    """The steady state of `t` on engine `e` (see the module docstring)."""
    g, h = e.gpu_scale, e.host_ms
    floor = e.host_floor_ms + e.host_ms_per_seq * t.running  # the host's own time per step, overlapped with the GPU's
    t_dec, t_mix, t_full = (max(g * x + h, floor) for x in (t.decode_ms, t.mixed_ms, t.full_ms))
    tpot = (1.0 - t.mixed_share) * t_dec + t.mixed_share * t_mix
    ttft = e.ttft_ms + t.chunks * t_mix + tpot / 2.0 + e.sync * t.ahead_steps * t_full
    rate = t.running / ((ttft + max(t.osl - 1, 0) * tpot) / 1000.0)
    queued = max(t.concurrency - t.running, 0.0)
    if queued > 0:  # the rest wait for a free slot: a whole request's time per `running` of them ahead
        ttft += queued / rate * 1000.0
    return Serving(concurrency=t.concurrency, running=t.running, ttft_ms=ttft, tpot_ms=tpot,
                   itl_p99_ms=max(t_mix, t_dec), requests_per_s=rate, output_tok_s=rate * t.osl,
                   total_tok_s=rate * (t.isl + t.osl), mixed_share=t.mixed_share)


def steady_state(ops: Ops, p: Parallel, e: EngineProfile, isl: int, osl: int, concurrency: float,
                 max_sequences: int) -> Serving:
    """Closed loop: `concurrency` requests always in flight, each isl prompt tokens and osl output tokens."""
    return combine(terms(ops, p, e, isl, osl, concurrency, max_sequences), e)
