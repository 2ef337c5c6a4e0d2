"""LLMEngine: continuous batching over a paged KV cache; `step()` = schedule -> run -> postprocess.

The engine knows nothing about tokenization, only token ids. It is not
thread-safe: `AsyncLLMEngine` drives it from one background thread. A
request that could never fit (longer than the context, or more KV blocks than
the whole cache) is refused at `add_request` with `RequestRefused`.
"""

from __future__ import annotations

from pathlib import Path

import psutil
import torch

from model_cache.resolve import resolve_model
from own_engine.core.block_manager import BlockManager
from own_engine.core.engine_facts import (
    RequestRefused,
    check_request,
    describe_model,
    generate,
    pick_device,
    precision_name,
)
from own_engine.core.model_runner import ModelRunner, RunnerStep, kv_bytes_per_token
from own_engine.core.sampler import Sampler
from own_engine.core.sampling_params import SamplingParams
from own_engine.core.scheduler import Scheduler
from own_engine.core.sequence import Sequence, StepOutput
from own_engine.core.sim_device import SimProfile, SimRunner, SimStep, is_sim, parse_sim
from own_engine.core.step_clock import StepClock
from own_engine.kernels.backends import SIMULATED, choose
from own_engine.model.loader import load_model

# per-step token budget, decode rows and prefill tokens together (docs/engines.md, "Prefill chunks"). CPU: a
# decode step reads the weights once, a prefill token computes with them, so one decode step is worth a fixed
# number of prefill tokens on a CPU whatever the model (about 2 x FLOP/s / bandwidth: 40-90 on the CI machine);
# 256 keeps a step that carries prompt tokens within about 3x the median request's time per token: on small-100m
# with 8 users always running, ITL p99 / TPOT p50 2.98 and TTFT p95 1.20x the old 512's (medians of 4 VALID
# runs, 2026-11-27; 288 gave 3.46 and 1.16x). GPU (and the simulated one): 2048
# (vLLM's default below 70 GiB, SGLang's below 35 GiB); on the H200 profile a full budget plus 64 decodes is
# 18.6 ms, where 8192 was 65 ms.
DEFAULT_MAX_BATCHED_TOKENS = {False: 256, True: 2048}
CPU_CHUNK_TOKENS_PAST_DECODES = 64  # on CPU the budget is at least max_num_seqs + this: room for a chunk at full batch
DEFAULT_KV_FRACTION_CPU = 0.5  # of available RAM: an upper bound only, pages cost memory once used
DEFAULT_KV_FRACTION_CUDA = 0.8  # of free GPU memory after the weights (activations and graphs need the rest)


class LLMEngine:
    """Continuous batching with chunked prefill over a paged KV cache sized from the model and the limits.

    `max_model_len` caps prompt + output per request (default: the model's context); `max_num_seqs` caps the
    sequences in one step; `max_num_batched_tokens` is the per-step token budget that prompts are chunked to
    (default: 256 on CPU, at least max_num_seqs + 64; 2048 on CUDA and a simulated device). The KV cache holds `num_kv_blocks` blocks of `block_size` tokens;
    by default enough for `max_num_seqs` sequences of `max_model_len` tokens, but at most
    `kv_cache_memory_fraction` of the memory available when the engine starts (default: 0.8 of free GPU memory
    on CUDA, 0.5 of available RAM on CPU), or exactly `kv_cache_gb` GiB when that is given. On CPU at fp32 the
    linear layers run on packed weights (`backends.choose`, once; `linear_kernels`: auto, panel, onednn,
    torch), and with the panel kernel attention and the rest of each layer run on own_engine's native kernels too
    (`own_engine.kernels.backends`). On CPU (Linux) a freed KV block's pages go back to the OS unless
    `release_freed_kv=False` (`memory_release`). `overlap` schedules and launches step n+1 before step n's tokens
    are awaited (default: on a simulated device only; docs/engines.md, "Overlap scheduling"); `decode_attention`
    picks the decode rows' attention on CUDA: "sdpa" (the padded batch) or "triton" (the paged kernel,
    `own_engine.kernels.triton_decode`, opt-in).
    """

    def __init__(self, model_path: str | Path | None = None, *, device: str = "auto", dtype: str = "auto",
                 max_num_seqs: int = 64, max_num_batched_tokens: int | None = None,
                 max_model_len: int | None = None, block_size: int = 16, num_kv_blocks: int | None = None,
                 kv_cache_gb: float | None = None, kv_cache_memory_fraction: float | None = None,
                 threads: int | None = None, seed: int = 0, cuda_graphs: bool | None = None,
                 linear_kernels: str = "auto", release_freed_kv: bool = True, overlap: bool | None = None,
                 decode_attention: str = "sdpa") -> None:
        if threads is not None:
            if threads < 1:
                raise ValueError(f"threads must be >= 1, got {threads}")
            torch.set_num_threads(threads)  # process-wide: torch has no per-engine thread pool
        self.num_threads = torch.get_num_threads()  # on the building thread: the one that steps the engine
        if max_num_seqs < 1 or block_size < 1:
            raise ValueError(f"max_num_seqs and block_size must be >= 1, got {max_num_seqs} and {block_size}")
        if kv_cache_memory_fraction is not None and not 0 < kv_cache_memory_fraction <= 1:
            raise ValueError(f"kv_cache_memory_fraction must be in (0, 1], got {kv_cache_memory_fraction}")
        self.model_path = resolve_model(model_path)
        # a simulated device (`sim_device`): the model is loaded on CPU for its shape only, never run
        self.sim: SimProfile | None = parse_sim(device) if is_sim(device) else None
        self.device = torch.device("cpu") if self.sim is not None else pick_device(device)
        self.model = load_model(self.model_path, device=self.device, dtype="fp32" if self.sim else dtype,
                                max_model_len=max_model_len)
        # the kernel backend, chosen once: nothing asks again which one runs
        self.kernels = choose(self.model, linear_kernels) if self.sim is None else SIMULATED
        self.num_packed_linears, self.linear_kernels = self.kernels.num_packed, self.kernels.linear
        self.linear_kernel_note = self.kernels.note
        cfg = self.model.cfg
        self.config = cfg
        self.max_model_len = self.model.max_model_len
        self.block_size = block_size
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens or self._default_budget(max_num_seqs)
        if self.max_num_batched_tokens < max_num_seqs:
            raise ValueError(f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be >= max_num_seqs "
                             f"({max_num_seqs}): every running sequence needs room for its token in a step")
        self.num_kv_blocks = num_kv_blocks or self._default_num_blocks(kv_cache_gb, kv_cache_memory_fraction)
        if self.num_kv_blocks < 1:
            raise ValueError(f"num_kv_blocks must be >= 1, got {self.num_kv_blocks}")
        self.eos_token_ids = cfg.eos_token_ids
        self.block_manager = BlockManager(self.num_kv_blocks, block_size)
        self.scheduler = Scheduler(self.block_manager, max_num_seqs=max_num_seqs,
                                   max_num_batched_tokens=self.max_num_batched_tokens,
                                   max_model_len=self.max_model_len, eos_token_ids=cfg.eos_token_ids)
        # where each step's time goes (`step_clock`); on CUDA and a simulated device the forward is device time
        self.clock = StepClock(forward_is_device=self.sim is not None or self.device.type == "cuda")
        # CUDA graphs for decode by default on CUDA; on CPU `cuda_graphs=True` runs the same padded path eagerly
        self.cuda_graphs = self.device.type == "cuda" if cuda_graphs is None else cuda_graphs
        self.runner: ModelRunner | SimRunner
        if self.sim is not None:
            self.cuda_graphs = False
            self.runner = SimRunner(self.sim, vocab_size=cfg.vocab_size, eos_token_ids=cfg.eos_token_ids,
                                    block_size=block_size, clock=self.clock)
        else:
            self.runner = ModelRunner(self.model, num_blocks=self.num_kv_blocks, block_size=block_size,
                                      sampler=Sampler(cfg.eos_token_ids, seed), cuda_graphs=self.cuda_graphs,
                                      max_num_seqs=max_num_seqs, release_freed_kv=release_freed_kv,
                                      native=self.kernels.attention, clock=self.clock,
                                      decode_attention=decode_attention)
        if self.runner.release_blocks.enabled:
            self.block_manager.on_free = self.runner.release_blocks
        if self.runner.graphs is not None:
            self.runner.graphs.capture_all()
        # overlap scheduling (docs/engines.md, "Overlap scheduling"): step n+1 is scheduled, prepared and launched
        # while step n runs on the device. On by default on a simulated device only: on CPU the forward is the
        # host's own work (nothing to overlap), and on CUDA it has not been measured yet (`overlap=True` runs it)
        self.overlap = self.sim is not None if overlap is None else overlap
        self._in_flight: tuple[SimStep | RunnerStep, list[tuple[Sequence, int]]] | None = None
        self.seqs: dict[int, Sequence] = {}
        self.num_steps = 0
        self.max_batch_seen = 0

    def _default_budget(self, max_num_seqs: int) -> int:
        """The per-step token budget for this device (see DEFAULT_MAX_BATCHED_TOKENS)."""
        if self.device.type == "cuda" or self.sim is not None:
            return max(DEFAULT_MAX_BATCHED_TOKENS[True], max_num_seqs)
        return max(DEFAULT_MAX_BATCHED_TOKENS[False], max_num_seqs + CPU_CHUNK_TOKENS_PAST_DECODES)

    def _default_num_blocks(self, kv_cache_gb: float | None, fraction: float | None) -> int:
        """Blocks for max_num_seqs full-length sequences, capped by the memory given to the cache."""
        per_block = kv_bytes_per_token(self.model) * self.block_size
        per_seq = -(-self.max_model_len // self.block_size)
        if kv_cache_gb is not None:
            return max(1, int(kv_cache_gb * 2**30) // per_block)
        if self.sim is not None:  # no cache memory is allocated: room for every sequence at full length
            return self.max_num_seqs * per_seq
        if self.device.type == "cuda":
            available = torch.cuda.mem_get_info(self.device)[0]
            fraction = DEFAULT_KV_FRACTION_CUDA if fraction is None else fraction
        else:
            available = psutil.virtual_memory().available
            fraction = DEFAULT_KV_FRACTION_CPU if fraction is None else fraction
        by_memory = int(fraction * available) // per_block
        if by_memory < per_seq:
            raise ValueError(f"a KV cache of {fraction:g} x {available / 2**30:.1f} GiB available holds "
                             f"{by_memory * self.block_size} tokens, less than one sequence of max_model_len "
                             f"{self.max_model_len}; lower max_model_len or raise kv_cache_memory_fraction")
        return min(by_memory, self.max_num_seqs * per_seq)

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
            launched = (self.runner.launch(batch), self.scheduler.advance(batch))  # type: ignore[union-attr]
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
                "cuda_graphs": self.cuda_graphs, "overlap": self.overlap,
                **self.kernels.describe(),
                **({"decode_attention": "triton"} if getattr(self.runner, "decode_route", "") == "triton" else {}),
                "kv_page_release": self.runner.release_blocks.enabled,
                "simulated_device": self.runner.describe() if isinstance(self.runner, SimRunner) else None}


