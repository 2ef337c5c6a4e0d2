"""LLMEngine: continuous batching over a paged KV cache; `step()` = schedule -> run -> postprocess.

The engine knows nothing about tokenization, only token ids. It is not
thread-safe: `AsyncLLMEngine` drives it from one background thread. A
request that could never fit (longer than the context, or more KV blocks than
the whole cache) is refused at `add_request` with `RequestRefused`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from own_engine.block_manager import BlockManager
from own_engine.loader import load_model
from own_engine.model_runner import ModelRunner
from own_engine.paths import resolve_model
from own_engine.sampler import Sampler
from own_engine.sampling_params import SamplingParams
from own_engine.scheduler import Scheduler
from own_engine.sequence import Sequence

if TYPE_CHECKING:
    from own_engine.static_engine import StaticBatchEngine

StepOutput = tuple[int, list[int], bool]  # (seq_id, new token ids, finished)
DEFAULT_KV_CACHE_GB_CPU = 1.0


class RequestRefused(ValueError):
    """The request can never be served by this engine configuration; the message says what to change."""


def check_request(prompt_ids: list[int], params: SamplingParams, vocab: int, max_model_len: int) -> int:
    """Refuse a request no engine mode can serve (empty, bad ids, too long); returns its total length."""
    if not prompt_ids:
        raise RequestRefused("the prompt is empty; send at least one token id")
    if min(prompt_ids) < 0 or max(prompt_ids) >= vocab:
        bad = next(t for t in prompt_ids if not 0 <= t < vocab)
        raise RequestRefused(f"prompt token id {bad} is outside the model's vocab [0, {vocab})")
    total = len(prompt_ids) + params.max_tokens
    if total > max_model_len:
        raise RequestRefused(f"prompt ({len(prompt_ids)}) + max_tokens ({params.max_tokens}) = {total} tokens "
                             f"exceeds max_model_len {max_model_len}; shorten the request")
    return total


def pick_device(device: str) -> torch.device:
    """'auto' is CUDA when available, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' asked for but no CUDA GPU is visible to torch; use device='cpu' or 'auto'")
    return dev


class LLMEngine:
    def __init__(self, model_path: str | Path | None = None, *, device: str = "auto", dtype: str = "auto",
                 max_num_seqs: int = 64, max_num_batched_tokens: int | None = None,
                 max_model_len: int | None = None, block_size: int = 16, num_kv_blocks: int | None = None,
                 kv_cache_gb: float | None = None, threads: int | None = None, seed: int = 0,
                 cuda_graphs: bool | None = None) -> None:
        if threads is not None:
            if threads < 1:
                raise ValueError(f"threads must be >= 1, got {threads}")
            torch.set_num_threads(threads)  # process-wide: torch has no per-engine thread pool
        if max_num_seqs < 1 or block_size < 1:
            raise ValueError("max_num_seqs and block_size must be >= 1")
        self.model_path = resolve_model(model_path)
        self.device = pick_device(device)
        self.model = load_model(self.model_path, device=self.device, dtype=dtype, max_model_len=max_model_len)
        cfg = self.model.cfg
        self.config = cfg
        self.max_model_len = self.model.max_model_len
        self.block_size = block_size
        self.max_num_seqs = max_num_seqs
        self.num_kv_blocks = num_kv_blocks or self._default_num_blocks(kv_cache_gb)
        if self.num_kv_blocks < 1:
            raise ValueError(f"num_kv_blocks must be >= 1, got {self.num_kv_blocks}")
        self.eos_token_ids = cfg.eos_token_ids
        self.block_manager = BlockManager(self.num_kv_blocks, block_size)
        self.scheduler = Scheduler(self.block_manager, max_num_seqs=max_num_seqs,
                                   max_num_batched_tokens=max(max_num_batched_tokens or 0, self.max_model_len),
                                   max_model_len=self.max_model_len, eos_token_ids=cfg.eos_token_ids)
        # CUDA graphs for decode by default on CUDA; on CPU `cuda_graphs=True` runs the same padded path eagerly
        self.cuda_graphs = self.device.type == "cuda" if cuda_graphs is None else cuda_graphs
        self.runner = ModelRunner(self.model, num_blocks=self.num_kv_blocks, block_size=block_size,
                                  sampler=Sampler(cfg.eos_token_ids, seed), cuda_graphs=self.cuda_graphs,
                                  max_num_seqs=max_num_seqs)
        if self.runner.graphs is not None:
            self.runner.graphs.capture_all()
        self.seqs: dict[int, Sequence] = {}
        self.num_steps = 0
        self.max_batch_seen = 0

    def _default_num_blocks(self, kv_cache_gb: float | None) -> int:
        per_block = ModelRunner.kv_bytes_per_token(self.model) * self.block_size
        if kv_cache_gb is None:
            if self.device.type == "cuda":
                free, _ = torch.cuda.mem_get_info(self.device)
                kv_cache_gb = 0.8 * free / 2**30
            else:
                kv_cache_gb = DEFAULT_KV_CACHE_GB_CPU
        by_memory = int(kv_cache_gb * 2**30) // per_block
        enough = self.max_num_seqs * -(-self.max_model_len // self.block_size)  # never more than can be used
        return max(1, min(by_memory, enough))

    @property
    def precision(self) -> str:
        return precision_name(self.model.dtype)

    def add_request(self, prompt_ids: list[int], params: SamplingParams) -> int:
        """Queue one request; returns its seq_id. Raises RequestRefused if it can never be served."""
        total = check_request(prompt_ids, params, self.config.vocab_size, self.max_model_len)
        blocks = self.block_manager.blocks_needed(total)
        if blocks > self.num_kv_blocks:
            raise RequestRefused(f"the request needs {blocks} KV blocks but the whole cache has "
                                 f"{self.num_kv_blocks}; raise num_kv_blocks/kv_cache_gb or shorten the request")
        seq = Sequence(list(prompt_ids), params)
        self.seqs[seq.seq_id] = seq
        self.scheduler.add(seq)
        return seq.seq_id

    def abort(self, seq_id: int) -> None:
        seq = self.seqs.pop(seq_id, None)
        if seq is not None:
            self.scheduler.abort(seq)

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished()

    def step(self) -> list[StepOutput]:
        """One engine step: the new token of every scheduled sequence."""
        seqs, is_prefill = self.scheduler.schedule()
        if not seqs:
            return []
        token_ids = self.runner.run(seqs, is_prefill)
        self.scheduler.postprocess(seqs, token_ids)
        self.num_steps += 1
        self.max_batch_seen = max(self.max_batch_seen, len(seqs))
        out = [(s.seq_id, [t], s.is_finished) for s, t in zip(seqs, token_ids, strict=True)]
        for s in seqs:
            if s.is_finished:
                del self.seqs[s.seq_id]
        return out

    def generate(self, prompts: list[list[int]], params: SamplingParams | list[SamplingParams]) -> list[list[int]]:
        """Offline convenience: run every prompt to completion; completion ids in prompt order."""
        plist = params if isinstance(params, list) else [params] * len(prompts)
        ids = [self.add_request(p, sp) for p, sp in zip(prompts, plist, strict=True)]
        outs: dict[int, list[int]] = {i: [] for i in ids}
        while self.has_unfinished():
            for seq_id, toks, _ in self.step():
                if seq_id in outs:
                    outs[seq_id].extend(toks)
        return [outs[i] for i in ids]

    def stats(self) -> dict[str, float]:
        return {"kv_blocks_used": self.block_manager.num_used, "kv_blocks_total": self.num_kv_blocks,
                "running": len(self.scheduler.running), "waiting": len(self.scheduler.waiting),
                "preemptions": self.scheduler.num_preemptions, "steps": self.num_steps,
                "max_batch_seen": self.max_batch_seen}

    def describe(self) -> dict:
        """What the adapter reports about this engine."""
        return {**describe_model(self), "block_size": self.block_size, "kv_blocks_total": self.num_kv_blocks,
                "max_num_seqs": self.max_num_seqs, "cuda_graphs": self.cuda_graphs}


def describe_model(engine: LLMEngine | StaticBatchEngine) -> dict:
    """Device, precision, model facts shared by both engines' `describe()`."""
    cfg, model = engine.config, engine.model
    return {"device": _device_name(engine.device), "precision": precision_name(model.dtype),
            "model_path": str(engine.model_path),
            "threads": torch.get_num_threads() if engine.device.type == "cpu" else None,
            "n_params": model.n_params, "dtype_bytes": model.embed_tokens.element_size(),
            "max_model_len": engine.max_model_len, "pid": os.getpid(),
            "model_config": {k: getattr(cfg, k) for k in (
                "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                "intermediate_size", "vocab_size")}}


def precision_name(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]


def _device_name(dev: torch.device) -> str:
    if dev.type == "cuda":
        idx = dev.index or 0
        return f"cuda:{idx} ({torch.cuda.get_device_name(idx)})"
    return "cpu"
