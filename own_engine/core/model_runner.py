"""ModelRunner: owns the model and the paged KV cache; turns a scheduled batch into next tokens.

A step is one forward over a flat batch: the one-token rows (decodes) first,
then each prefill chunk's tokens. Its inputs (ids, positions, cache slots)
leave the host as one tensor, and the attention metadata is built once per
step, not per layer. Logits are computed only for rows that end a sequence's
uncomputed tokens (a decode, or a prompt's last chunk). Decode rows take the
kernel backend's one decode route (`paged_attention.decode_route`: native;
on CPU SDPA, one call per sequence in place or per run of scattered rows of
one context length; or the padded batch), fixed when the runner is built. On CUDA the same code runs with SDPA's fused kernels, and
decode-only steps replay CUDA graphs of the padded route
(`cuda_graph.DecodeGraphs`) when `cuda_graphs` is on (the default on CUDA).

On CPU the KV cache is allocated zeroed but untouched (calloc'd pages, the
cache page-aligned), so the process's memory grows with the blocks actually
used, not with the cache's size; `release_blocks` hands a freed block's pages
back (`memory_release.KVPageRelease`), so it shrinks again when they are
freed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import psutil
import torch

from own_engine.core.engine_facts import device_name, pick_device
from own_engine.core.host_tensors import host_long, to_device
from own_engine.core.memory_release import KVPageRelease, page_aligned_zeros
from own_engine.core.runner_defaults import (
    DEFAULT_KV_FRACTION_CPU,
    DEFAULT_KV_FRACTION_CUDA,
    default_token_budget,
    kv_cache_blocks,
)
from own_engine.core.sampler import Sampler
from own_engine.core.scheduler import PLACEHOLDER, ScheduledBatch
from own_engine.core.sequence import Sequence
from own_engine.core.step_clock import StepClock
from own_engine.kernels.backends import choose
from own_engine.model.loader import load_model
from own_engine.model.paged_attention import ChunkMeta, DecodeRun, PagedAttention, PagedMeta, decode_route

if TYPE_CHECKING:
    from own_engine.core.engine_config import EngineConfig

def lazy_zeros(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Zeros; on CPU page-aligned and backed by calloc'd memory, whose pages cost RSS only once written."""
    if device.type != "cpu":
        return torch.zeros(shape, dtype=dtype, device=device)
    nbytes = int(np.prod(shape)) * torch.empty((), dtype=dtype).element_size()
    return page_aligned_zeros(nbytes).view(dtype).view(shape)


class RunnerStep:
    """A launched step (`ModelRunner.launch`): its sampled ids on the device and, on CUDA, their copy on the way to
    pinned host memory with an event recorded after it. `result()` waits on that event only: a `.tolist()` of the
    device tensor would queue behind the next step, launched meanwhile, and wait for it too (no overlap)."""

    def __init__(self, sampled: torch.Tensor) -> None:
        self.sampled = sampled
        self.event = None
        if sampled.is_cuda:
            self.host = torch.empty(sampled.shape, dtype=sampled.dtype, pin_memory=True)
            self.host.copy_(sampled, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()

    def result(self) -> list[int]:
        """Wait for the step (and only it); its token ids, in the order of its sampling rows."""
        if self.event is None:
            return self.sampled.tolist()
        self.event.synchronize()
        return self.host.tolist()


class ModelRunner:
    """The `Runner` (`own_engine.core.runner`) that runs the model, on CPU or CUDA."""

    def __init__(self, config: EngineConfig, model_path: Path) -> None:
        self.device = pick_device(config.device)
        self.device_name = device_name(self.device)
        model = self.model = load_model(model_path, device=self.device, dtype=config.dtype,
                                        max_model_len=config.max_model_len)
        cfg = model.cfg
        # the kernel backend, chosen once: nothing asks again which one runs
        self.kernels = choose(model, config.linear_kernels)
        self.native = self.kernels.attention  # every row through own_engine's native attention kernels (CPU fp32)
        # on CUDA the forward is device time; on CPU it is this thread's own work
        self.clock = StepClock(forward_is_device=self.device.type == "cuda")
        self.block_size = block_size = config.block_size
        self.sampler = Sampler(cfg.eos_token_ids, config.seed)
        # CUDA graphs for decode by default on CUDA; on CPU `cuda_graphs=True` runs the same padded path eagerly
        cuda_graphs = self.cuda_graphs = self.device.type == "cuda" if config.cuda_graphs is None else config.cuda_graphs
        on_gpu = self.device.type == "cuda"
        self.max_num_batched_tokens = config.max_num_batched_tokens or default_token_budget(on_gpu, config.max_num_seqs)
        self.num_kv_blocks = num_blocks = kv_cache_blocks(config, model, self._memory(config))
        # overlap gains nothing on CPU (the forward is the host's own work) and is not measured on CUDA: opt-in
        self.overlap = bool(config.overlap)
        # the backend's one decode route (paged_attention's docstring), chosen here once, never per step
        self.decode_route = decode_route(self.native, self.device, cuda_graphs, config.decode_attention)
        # with graphs, one extra block past the BlockManager's range takes the padding rows' writes
        shape = (cfg.num_hidden_layers, num_blocks + int(cuda_graphs), block_size, cfg.num_key_value_heads,
                 cfg.head_dim)
        self.k_cache = lazy_zeros(shape, model.dtype, self.device)
        self.v_cache = lazy_zeros(shape, model.dtype, self.device)
        # a freed block's pages go back to the OS (CPU, Linux); `release_blocks.enabled` says whether they do
        self.release_blocks = KVPageRelease([self.k_cache, self.v_cache] if config.release_freed_kv else [])
        self.on_blocks_freed = self.release_blocks if self.release_blocks.enabled else None
        self._last: tuple[torch.Tensor, dict[int, int]] | None = None  # the last launch's sampled ids, by seq_id
        self.graphs = None
        if cuda_graphs:
            from own_engine.kernels.cuda_graph import DecodeGraphs

            self.graphs = DecodeGraphs(model, self.k_cache, self.v_cache, block_size=block_size,
                                       dummy_block=num_blocks, max_batch=config.max_num_seqs,
                                       max_blocks_per_seq=-(-model.max_model_len // block_size),
                                       triton=self.decode_route == "triton")
            self.graphs.capture_all()

    def _memory(self, config: EngineConfig) -> tuple[int, float]:
        """Bytes available to the KV cache when the engine starts, and the share of them it may take."""
        if self.device.type == "cuda":
            return torch.cuda.mem_get_info(self.device)[0], config.kv_cache_memory_fraction or DEFAULT_KV_FRACTION_CUDA
        return psutil.virtual_memory().available, config.kv_cache_memory_fraction or DEFAULT_KV_FRACTION_CPU

    def describe(self) -> dict:
        return {"cuda_graphs": self.cuda_graphs,
                **({"decode_attention": "triton"} if self.decode_route == "triton" else {}),
                "kv_page_release": self.release_blocks.enabled, "simulated_device": None}

    def launch(self, batch: ScheduledBatch) -> RunnerStep:
        """Overlap scheduling: run the step's forward and sampling without waiting for the device, and return its
        sampled ids as a device tensor (`RunnerStep.result()` waits). A decode row whose last token is still a
        placeholder (`Scheduler.advance`) takes it from the step launched before, on the device. On CUDA the
        host's work for the next step then runs while the device runs this one; on CPU the forward is this
        thread's own computation, so the step is done when this returns and nothing is gained."""
        with torch.inference_mode():
            logits, done = self._forward(batch, self._placeholders(batch.seqs[: batch.num_decodes]))
            sampled = self.sampler.on_device(logits, done)
        self._last = (sampled, {s.seq_id: i for i, s in enumerate(done)})
        return RunnerStep(sampled)

    def _placeholders(self, decodes: list[Sequence]) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The decode rows whose input token is still a placeholder, and those tokens (from the last launched
        step's sampled ids, on the device): (row indices, token ids), or None when every input is known."""
        rows, picks = [], []
        last = self._last
        for i, seq in enumerate(decodes):
            if seq.token_ids[seq.num_computed_tokens] == PLACEHOLDER:
                assert last is not None and seq.seq_id in last[1], "a placeholder from a step not launched last"
                rows.append(i)
                picks.append(last[1][seq.seq_id])
        if not rows:
            return None
        assert last is not None
        return self._tensor(rows), last[0][self._tensor(picks)]

    def _tensor(self, values: list) -> torch.Tensor:
        """A long tensor of `values` (ints, or rows of equal length) on the device. Built through an `array` and
        `torch.frombuffer`: `torch.tensor` on Python lists walks them element by element (recursive_store), the
        largest part of a small decode step's input preparation."""
        return to_device(host_long(values), self.device)

    def prepare(self, batch: ScheduledBatch) -> tuple[torch.Tensor, torch.Tensor, PagedMeta, torch.Tensor | None]:
        """input ids [T], positions [T], attention metadata, and the rows to take logits of (None: every row)."""
        bs = self.block_size
        nd = batch.num_decodes
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        for seq in batch.seqs[:nd]:
            p = seq.num_computed_tokens
            ids.append(seq.token_ids[p])
            positions.append(p)
            slots.append(seq.block_table[p // bs] * bs + p % bs)
        chunks: list[ChunkMeta] = []
        logit_rows = list(range(nd))  # a decode row always ends its sequence's uncomputed tokens
        for seq, n in zip(batch.seqs[nd:], batch.num_new_tokens[nd:], strict=True):
            p0, start = seq.num_computed_tokens, len(ids)
            ids.extend(seq.token_ids[p0:p0 + n])
            positions.extend(range(p0, p0 + n))
            table = seq.block_table
            slots.extend(table[p // bs] * bs + p % bs for p in range(p0, p0 + n))
            chunk = ChunkMeta(start, start + n, p0)
            ctx = p0 + n
            if p0 or self.native is not None:  # the native kernels read even a first chunk from the cache
                chunk.block_ids = self._tensor(table[: -(-ctx // bs)])
            if p0 and self.native is None:
                rows = torch.arange(p0, ctx, device=self.device)
                chunk.mask = torch.arange(ctx, device=self.device)[None, :] <= rows[:, None]
            chunks.append(chunk)
            if p0 + n == len(seq):
                logit_rows.append(start + n - 1)
        host = self._tensor([ids, positions, slots])  # one host-to-device copy for all three
        meta = PagedMeta(slot_mapping=host[2], num_decodes=nd, chunks=chunks, native=self.native)
        if nd:
            self._decode_meta(batch.seqs[:nd], meta)
        every_row = len(logit_rows) == len(ids)
        return host[0], host[1], meta, None if every_row else self._tensor(logit_rows)

    def _decode_meta(self, seqs: list[Sequence], meta: PagedMeta) -> None:
        """What the decode rows' route reads (see paged_attention): `native`, every row's block table and context
        length; `sdpa-runs`, the rows in runs (`_runs`); `sdpa-padded`, block tables [B, max_blocks]
        padded with each row's first block, and a mask where the contexts differ."""
        lens = [s.num_computed_tokens + 1 for s in seqs]
        if self.decode_route in ("native", "triton"):  # one call per layer for every row, blocks read in place
            width = max(len(s.block_table) for s in seqs)
            meta.block_tables = self._tensor([s.block_table + [0] * (width - len(s.block_table)) for s in seqs])
            meta.lens = self._tensor(lens)
            meta.triton = self.decode_route == "triton"
            return
        if self.decode_route == "sdpa-runs":
            meta.runs = self._runs(seqs, lens)
            return
        width = max(len(s.block_table) for s in seqs)
        flat = [b for s in seqs for b in s.block_table + [s.block_table[0]] * (width - len(s.block_table))]
        meta.block_tables = self._tensor(flat).view(len(seqs), width)
        meta.max_len = max(lens)
        if min(lens) != meta.max_len:
            cols = torch.arange(meta.max_len, device=self.device)
            meta.mask = (cols[None, :] < self._tensor(lens)[:, None])[:, None, None, :]

    def _runs(self, seqs: list[Sequence], lens: list[int]) -> list[DecodeRun]:
        """The decode rows in runs: a row whose blocks are one run of blocks alone, reading every layer's cache in
        place (views); consecutive other rows with one context length together, their blocks gathered."""
        runs: list[DecodeRun] = []
        start, bs = 0, self.block_size
        for i in range(1, len(seqs) + 1):
            if (i < len(seqs) and lens[i] == lens[start] and not seqs[i].kv_contiguous
                    and not seqs[start].kv_contiguous):
                continue
            n, blocks = lens[start], -(-lens[start] // bs)
            if i - start == 1 and seqs[start].kv_contiguous:
                first = seqs[start].block_table[0] * bs
                layers, _, _, hkv, d = self.k_cache.shape
                k = self.k_cache.view(layers, -1, hkv, d)[:, first:first + n].transpose(1, 2).unsqueeze(1)
                v = self.v_cache.view(layers, -1, hkv, d)[:, first:first + n].transpose(1, 2).unsqueeze(1)
                runs.append(DecodeRun(n, k=k, v=v))
            else:
                ids = [b for s in seqs[start:i] for b in s.block_table[:blocks]]
                runs.append(DecodeRun(n, rows=i - start, block_ids=self._tensor(ids)))
            start = i
        return runs

    @torch.inference_mode()
    def run(self, batch: ScheduledBatch) -> list[int]:
        """The next token of every sequence whose uncomputed tokens this step finishes, in batch order."""
        logits, done = self._forward(batch, mark=True)
        self._sync()
        self.clock.mark_forward_end()
        return self.sampler(logits, done)

    def _forward(self, batch: ScheduledBatch, fix: tuple[torch.Tensor, torch.Tensor] | None = None,
                 mark: bool = False) -> tuple[torch.Tensor, list[Sequence]]:
        """The step's logits (a graph replay for a decode-only step that fits the graphs, else the eager forward)
        and the sequences they are for. `fix`: decode rows whose input token is on the device only (`launch`);
        `mark`: the clock's forward starts here (a graph's input copies count as forward)."""
        if batch.num_decodes == len(batch.seqs) and self.graphs is not None and self.graphs.fits(batch.seqs):
            if mark:
                self.clock.mark_forward_start()
            return self.graphs.run(batch.seqs, fix), batch.seqs
        ids, positions, meta, logit_rows = self.prepare(batch)
        if fix is not None:
            ids[fix[0]] = fix[1]
        if mark:
            self.clock.mark_forward_start()
        logits = self.model(ids, positions, PagedAttention(self.k_cache, self.v_cache, meta), logit_rows)
        done = [s for s, n in zip(batch.seqs, batch.num_new_tokens, strict=True) if s.num_computed_tokens + n == len(s)]
        return logits, done

    def _sync(self) -> None:
        """On CUDA, wait for the forward (the sampler's `.tolist()` would wait anyway): its time is device time."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
