"""LLMEngine: continuous batching over a paged KV cache; `step()` = schedule -> run -> postprocess.

The engine knows nothing about tokenization, only token ids, and nothing about the device: its `Runner`
(`own_engine.core.runner`; `ModelRunner`, or `SimRunner` on a simulated device) runs each step and decides
what depends on where it runs. It is not thread-safe: `AsyncLLMEngine` drives it from one background thread.
A request that could never fit (longer than the context, or more KV blocks than the whole cache) is refused
at `add_request` with `RequestRefused`.
"""

from __future__ import annotations

import torch

from model_cache.resolve import resolve_model
from own_engine.core.block_manager import BlockManager
from own_engine.core.engine_config import EngineConfig
from own_engine.core.engine_facts import RequestRefused, check_request, describe_model, generate, precision_name
from own_engine.core.model_runner import ModelRunner
from own_engine.core.runner import LaunchedStep, Runner
from own_engine.core.runner_defaults import kv_bytes_per_token
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.scheduler import Scheduler
from own_engine.core.sequence import Sequence, StepOutput
from own_engine.core.sim_runner import SimRunner


class LLMEngine:
    """Continuous batching with chunked prefill over a paged KV cache sized from the model and the limits
    (`EngineConfig` says which). `overlap` schedules and launches step n+1 before step n's tokens are awaited
    (docs/engines.md, "Overlap scheduling")."""

    def __init__(self, config: EngineConfig) -> None:
        self.engine_config = config
        if config.threads is not None:
            torch.set_num_threads(config.threads)  # process-wide: torch has no per-engine thread pool
        self.num_threads = torch.get_num_threads()  # on the building thread: the one that steps the engine
        self.model_path = resolve_model(config.model)
        runner: Runner = (SimRunner if config.simulated else ModelRunner)(config, self.model_path)
        self.runner = runner
        self.model, self.device, self.device_name = runner.model, runner.device, runner.device_name
        self.kernels, self.clock, self.overlap = runner.kernels, runner.clock, runner.overlap
        self.num_packed_linears, self.linear_kernels = self.kernels.num_packed, self.kernels.linear
        self.linear_kernel_note = self.kernels.note
        self.config = self.model.cfg  # the model's config; the engine's own is `engine_config`
        self.max_model_len = self.model.max_model_len
        self.block_size = config.block_size
        self.max_num_seqs = config.max_num_seqs
        self.max_num_batched_tokens = runner.max_num_batched_tokens
        self.num_kv_blocks = runner.num_kv_blocks
        assert self.num_kv_blocks >= 1 and self.max_num_batched_tokens >= self.max_num_seqs
        self.eos_token_ids = self.config.eos_token_ids
        self.block_manager = BlockManager(self.num_kv_blocks, config.block_size, on_free=runner.on_blocks_freed)
        self.scheduler = Scheduler(self.block_manager, max_num_seqs=config.max_num_seqs,
                                   max_num_batched_tokens=self.max_num_batched_tokens,
                                   max_model_len=self.max_model_len, eos_token_ids=self.eos_token_ids)
        self._in_flight: tuple[LaunchedStep, list[tuple[Sequence, int]]] | None = None
        self.seqs: dict[int, Sequence] = {}
        self.num_steps = 0
        self.max_batch_seen = 0

    @property
    def precision(self) -> str:
        return precision_name(self.model.dtype)

    def add_request(self, prompt_ids: list[int], params: SamplingParams) -> int:
        """Queue one request; returns its seq_id. Raises RequestRefused if it can never be served."""
        total = check_request(prompt_ids, params, self.config.vocab_size, self.max_model_len)
        blocks = self.block_manager.blocks_needed(total)
        if blocks > self.num_kv_blocks:
            raise RequestRefused(f"the request needs {blocks} KV blocks but the whole cache has "
                                 f"{self.num_kv_blocks}; raise num_kv_blocks, kv_cache_gb or kv_cache_memory_fraction, or shorten the request")
        seq = Sequence(list(prompt_ids), params)
        self.seqs[seq.seq_id] = seq
        self.scheduler.add(seq)
        return seq.seq_id

    def abort(self, seq_id: int) -> None:
        seq = self.seqs.pop(seq_id, None)
        if seq is not None:
            self.scheduler.abort(seq)

    def has_unfinished(self) -> bool:
        return self.scheduler.has_unfinished() or self._in_flight is not None

    def step(self) -> list[StepOutput]:
        """One engine step: the new token of every sequence that sampled one (decodes, finished prefills). With
        overlap, the tokens of the step launched by the call before: this call launches the next step first."""
        if self.overlap:
            return self._step_overlapped()
        self.clock.begin()
        batch = self.scheduler.schedule()
        if not batch.seqs:
            self.clock.cancel()
            return []
        token_ids = self.runner.run(batch)
        sampled = self.scheduler.postprocess(batch, token_ids)
        self.num_steps += 1
        self.max_batch_seen = max(self.max_batch_seen, len(batch.seqs))
        out = [(s.seq_id, [t], s.is_finished) for s, t in zip(sampled, token_ids, strict=True)]
        for s in sampled:
            if s.is_finished:
                del self.seqs[s.seq_id]
        self.clock.engine_done()
        return out

    def _step_overlapped(self) -> list[StepOutput]:
        """Schedule and launch step n+1, then wait for step n and resolve its tokens. Step n+1 was scheduled as if
        every sequence of step n went on (`Scheduler.advance`); a row of one that step n stopped at an EOS is
        dropped. The clock's `forward` is here the launch plus the wait for the step before."""
        clock = self.clock
        clock.begin()
        batch = self.scheduler.schedule()
        launched = None
        clock.mark_forward_start()
        if batch.seqs:
            launched = (self.runner.launch(batch), self.scheduler.advance(batch))
            self.num_steps += 1
            self.max_batch_seen = max(self.max_batch_seen, len(batch.seqs))
        prev, self._in_flight = self._in_flight, launched
        if prev is None and launched is None:
            clock.cancel()
            return []
        out: list[StepOutput] = []
        token_ids = prev[0].result() if prev is not None else []
        clock.mark_forward_end()
        if prev is not None:
            for seq, tok, finished in self.scheduler.resolve(prev[1], token_ids):
                if seq.seq_id not in self.seqs:  # aborted while its step ran
                    continue
                out.append((seq.seq_id, [tok], finished))
                if finished:
                    del self.seqs[seq.seq_id]
        clock.engine_done()
        return out

    def generate(self, prompts: list[list[int]], params: SamplingParams | list[SamplingParams]) -> list[list[int]]:
        """Offline convenience: run every prompt to completion; completion ids in prompt order."""
        return generate(self, prompts, params)

    def stats(self) -> dict[str, float]:
        return {"kv_blocks_used": self.block_manager.num_used, "kv_blocks_total": self.num_kv_blocks,
                "running": len(self.scheduler.running), "waiting": len(self.scheduler.waiting),
                "preemptions": self.scheduler.num_preemptions, "steps": self.num_steps,
                "max_batch_seen": self.max_batch_seen, **self.clock.stats()}

    def describe(self) -> dict:
        """What the adapter reports about this engine."""
        return {**describe_model(self), "block_size": self.block_size, "kv_blocks_total": self.num_kv_blocks,
                "kv_cache_bytes": self.num_kv_blocks * self.block_size * kv_bytes_per_token(self.model),
                "max_num_seqs": self.max_num_seqs, "max_num_batched_tokens": self.max_num_batched_tokens,
                "overlap": self.overlap, **self.kernels.describe(), **self.runner.describe()}


