"""The bare decode step, timed: memory bandwidth, own_engine's step at a batch size, MBU, transformers generate().

Shared by `advisor selftest` and benchmarks/own_engine.py. Warm-up before
every timed run and a device sync around every timer (on CUDA a step returns
before the GPU has finished; without the sync the timer measures the launch).
MBU = bytes one decode step must read (weights + KV context) / step time /
the measured copy bandwidth of this device.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from own_engine.core.llm_engine import LLMEngine


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA); nothing on CPU."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_of(fn: Callable[[], float], repeats: int) -> float:
    """Median of `repeats` calls of `fn` after one untimed warm-up call."""
    fn()
    return statistics.median(fn() for _ in range(repeats))


def measure_bandwidth_gbs(device: torch.device, size_mb: int, repeats: int) -> float:
    """Copy bandwidth (read + write bytes / s) of a large fp32 tensor copy, median of `repeats`."""
    import torch

    n = size_mb * 2**20 // 4
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)  # warm-up: page in both buffers
    times = []
    for _ in range(repeats):
        sync(device)
        t = time.perf_counter()
        dst.copy_(src)
        sync(device)
        times.append(time.perf_counter() - t)
    return 2 * n * 4 / statistics.median(times) / 1e9


def decode_bytes_per_step(engine: LLMEngine, batch: int, context: int) -> int:
    """Bytes one decode step must read: every weight once (embedding rows only as used) + each KV context."""
    m = engine.model
    elt = m.embed_tokens.element_size()
    weights = m.n_params * elt
    if m.lm_head is not None:  # untied: the input embedding table is only gathered, row by row
        weights -= m.embed_tokens.numel() * elt - batch * m.cfg.hidden_size * elt
    kv = 2 * m.cfg.num_hidden_layers * m.cfg.kv_size * elt * batch * context
    return weights + kv


def run_decode(engine: LLMEngine, batch: int, prompt_len: int, steps: int, host: list[dict] | None = None) -> float:
    """Seconds per decode step with `batch` sequences at ~prompt_len context (one timing; callers take medians).

    `host` gets, per call, the mean ms per timed step of each part outside the forward (own_engine.core.step_clock):
    `host_ms` = everything but the forward (input preparation, scheduler, block manager, sampling, `.tolist()`,
    postprocess), and its parts `host_before_ms` and `sample_output_ms`.
    """
    from own_engine.core.sampling_params import SamplingParams

    vocab = engine.config.vocab_size
    for i in range(batch):
        prompt = [(7 + 13 * i + j) % (vocab - 3) + 3 for j in range(prompt_len)]
        engine.add_request(prompt, SamplingParams(max_tokens=steps + 2, ignore_eos=True))
    while any(s.num_completion_tokens == 0 for s in engine.seqs.values()):  # prefill everything first
        engine.step()
    engine.step()  # first decode step (not timed: allocations)
    sync(engine.device)
    before = dict(engine.clock.totals_ns)
    t = time.perf_counter()
    for _ in range(steps):
        engine.step()
    sync(engine.device)
    dt = (time.perf_counter() - t) / steps
    if host is not None:
        part = {k: (engine.clock.totals_ns[k] - before[k]) / steps / 1e6 for k in before}
        host.append({"host_ms": dt * 1e3 - part["forward"], "host_before_ms": part["host_before"],
                     "sample_output_ms": part["sample_output"]})
    while engine.has_unfinished():
        engine.step()
    return dt


def hf_generate_tok_s(path: Path, device: torch.device, dtype: torch.dtype, batch: int, prompt_len: int,
                      steps: int, repeats: int) -> float:
    """transformers generate() on the same folder and requests: output tokens/s (median of `repeats`)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype).to(device).eval()
    vocab = model.config.vocab_size
    ids = torch.tensor([[(7 + 13 * i + j) % (vocab - 3) + 3 for j in range(prompt_len)] for i in range(batch)],
                       device=device)

    def once() -> float:
        sync(device)
        t = time.perf_counter()
        with torch.inference_mode():
            model.generate(ids, max_new_tokens=steps, min_new_tokens=steps, do_sample=False, pad_token_id=2)
        sync(device)
        return time.perf_counter() - t

    return batch * steps / median_of(once, repeats)
