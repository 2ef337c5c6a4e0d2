"""StaticBatchEngine: the naive baseline, static batching in the style of plain `generate()`.

A batch is formed from what is waiting (up to `max_batch_size`), left-padded,
and run with a contiguous per-batch KV cache (no paging) until its longest
member ends; finished members keep their slot and keep being computed, as in
`generate()`. Requests that arrive meanwhile wait for the next batch. Each
member still streams its tokens as produced. Same interface as `LLMEngine`.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import torch
import torch.nn.functional as F

from model_cache.resolve import resolve_model
from own_engine.core.engine_facts import (
    check_request,
    describe_model,
    device_name,
    generate,
    pick_device,
    precision_name,
)
from own_engine.core.sampler import Sampler
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.scheduler import stop_reached
from own_engine.core.sequence import Sequence, SequenceStatus, StepOutput
from own_engine.kernels.backends import choose
from own_engine.model.loader import load_model


class ContiguousAttention:
    """Batch [B, S] of new tokens written at columns [start, start+S) of a [B, Hkv, S_max, D] cache per layer."""

    def __init__(self, k_cache: torch.Tensor, v_cache: torch.Tensor, batch: int, start: int,
                 mask: torch.Tensor) -> None:
        self.k_cache, self.v_cache, self.batch, self.start, self.mask = k_cache, v_cache, batch, start, mask

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 window: int | None = None) -> torch.Tensor:
        b = self.batch
        s = q.shape[0] // b
        end = self.start + s
        kc, vc = self.k_cache[layer], self.v_cache[layer]
        kc[:, :, self.start:end] = k.view(b, s, *k.shape[1:]).transpose(1, 2)
        vc[:, :, self.start:end] = v.view(b, s, *v.shape[1:]).transpose(1, 2)
        qb = q.view(b, s, *q.shape[1:]).transpose(1, 2)  # [B, Hq, S, D]
        mask = self.mask
        if window is not None and end > window:
            # left padding shifts query and key columns alike, so the window is a distance between columns
            cols = torch.arange(end, device=q.device)
            mask = mask & (cols[None, :] > cols[self.start:end, None] - window)  # [.., S, end]
        o = F.scaled_dot_product_attention(qb, kc[:, :, :end], vc[:, :, :end], attn_mask=mask,
                                           enable_gqa=q.shape[1] != k.shape[1])
        return o.transpose(1, 2).reshape(b * s, *q.shape[1:])


class _Batch:
    def __init__(self, seqs: list[Sequence], model, device: torch.device) -> None:
        cfg = model.cfg
        self.seqs = seqs
        self.pad = [max(len(s) for s in seqs) - len(s) for s in seqs]
        self.width = max(len(s) for s in seqs)  # columns filled after prefill
        s_max = self.width + max(s.params.max_tokens for s in seqs)
        shape = (cfg.num_hidden_layers, len(seqs), cfg.num_key_value_heads, s_max, cfg.head_dim)
        self.k = torch.zeros(shape, dtype=model.dtype, device=device)
        self.v = torch.zeros(shape, dtype=model.dtype, device=device)
        self.pad_t = torch.tensor(self.pad, device=device)


class StaticBatchEngine:
    def __init__(self, model_path: str | Path | None = None, *, device: str = "auto", dtype: str = "auto",
                 max_batch_size: int = 64, max_model_len: int | None = None, threads: int | None = None,
                 seed: int = 0, linear_kernels: str = "auto") -> None:
        if threads is not None:
            if threads < 1:
                raise ValueError(f"threads must be >= 1, got {threads}")
            torch.set_num_threads(threads)
        self.num_threads = torch.get_num_threads()  # on the building thread: the one that steps the engine
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.model_path = resolve_model(model_path)
        self.device = pick_device(device)
        self.device_name = device_name(self.device)
        self.model = load_model(self.model_path, device=self.device, dtype=dtype, max_model_len=max_model_len)
        # the same kernels as LLMEngine
        kernels = choose(self.model, linear_kernels)
        self.num_packed_linears, self.linear_kernels, self.linear_kernel_note = kernels.num_packed, kernels.linear, kernels.note
        self.config = self.model.cfg
        self.max_model_len = self.model.max_model_len
        self.max_batch_size = max_batch_size
        self.eos_token_ids = frozenset(self.config.eos_token_ids)
        self.sampler = Sampler(self.config.eos_token_ids, seed)
        self.waiting: deque[Sequence] = deque()
        self.batch: _Batch | None = None
        self.num_steps = 0
        self.max_batch_seen = 0

    @property
    def precision(self) -> str:
        return precision_name(self.model.dtype)

    def add_request(self, prompt_ids: list[int], params: SamplingParams) -> int:
        check_request(prompt_ids, params, self.config.vocab_size, self.max_model_len)
        seq = Sequence(list(prompt_ids), params)
        self.waiting.append(seq)
        return seq.seq_id

    def abort(self, seq_id: int) -> None:
        for seq in self.waiting:
            if seq.seq_id == seq_id:
                self.waiting.remove(seq)
                return
        if self.batch is not None:
            for seq in self.batch.seqs:
                if seq.seq_id == seq_id:
                    seq.status = SequenceStatus.FINISHED  # keeps its slot until the batch ends, like generate()

    def has_unfinished(self) -> bool:
        return bool(self.waiting) or self.batch is not None

    @torch.inference_mode()
    def step(self) -> list[StepOutput]:
        if self.batch is None:
            if not self.waiting:
                return []
            n = min(len(self.waiting), self.max_batch_size)
            self.batch = _Batch([self.waiting.popleft() for _ in range(n)], self.model, self.device)
            for seq in self.batch.seqs:
                seq.status = SequenceStatus.RUNNING
            logits = self._prefill(self.batch)
        else:
            logits = self._decode(self.batch)
        b = self.batch
        live = [i for i, s in enumerate(b.seqs) if not s.is_finished]
        live_seqs = [b.seqs[i] for i in live]
        tokens = self.sampler(logits[live], live_seqs) if live else []
        out: list[StepOutput] = []
        for seq, tok in zip(live_seqs, tokens, strict=True):
            seq.append_token(tok)
            if stop_reached(seq, self.eos_token_ids, self.max_model_len):
                seq.status = SequenceStatus.FINISHED
            out.append((seq.seq_id, [tok], seq.is_finished))
        self.num_steps += 1
        self.max_batch_seen = max(self.max_batch_seen, len(b.seqs))
        if all(s.is_finished for s in b.seqs):
            self.batch = None
        return out

    def _prefill(self, b: _Batch) -> torch.Tensor:
        n, w = len(b.seqs), b.width
        ids = torch.tensor([[0] * p + s.token_ids for s, p in zip(b.seqs, b.pad, strict=True)], device=self.device)
        cols = torch.arange(w, device=self.device)
        positions = (cols[None, :] - b.pad_t[:, None]).clamp(min=0)
        valid = cols[None, :] >= b.pad_t[:, None]  # [B, W]
        causal = torch.ones(w, w, dtype=torch.bool, device=self.device).tril()
        # pad rows attend to themselves only, so their (unused) outputs stay finite
        mask = (causal[None] & valid[:, None, :]) | torch.eye(w, dtype=torch.bool, device=self.device)[None]
        attn = ContiguousAttention(b.k, b.v, n, 0, mask[:, None])
        last = torch.arange(n, device=self.device) * w + (w - 1)
        return self.model(ids.view(-1), positions.view(-1), attn, last)

    def _decode(self, b: _Batch) -> torch.Tensor:
        n, c = len(b.seqs), b.width
        ids = torch.tensor([s.last_token for s in b.seqs], device=self.device)
        positions = c - b.pad_t
        mask = (torch.arange(c + 1, device=self.device)[None, :] >= b.pad_t[:, None])[:, None, None, :]
        logits = self.model(ids, positions, ContiguousAttention(b.k, b.v, n, c, mask))
        b.width += 1
        return logits

    def generate(self, prompts: list[list[int]], params: SamplingParams | list[SamplingParams]) -> list[list[int]]:
        """Offline convenience: run every prompt to completion; completion ids in prompt order."""
        return generate(self, prompts, params)

    def stats(self) -> dict[str, float]:
        running = 0 if self.batch is None else sum(not s.is_finished for s in self.batch.seqs)
        return {"running": running, "waiting": len(self.waiting), "preemptions": 0,
                "batch_size": 0 if self.batch is None else len(self.batch.seqs), "steps": self.num_steps,
                "max_batch_seen": self.max_batch_seen}

    def describe(self) -> dict:
        return {**describe_model(self), "max_num_seqs": self.max_batch_size}
