"""ModelRunner: owns the model and the paged KV cache; turns scheduled sequences into next tokens.

Prefill packs the new sequences' tokens into one flat batch; decode runs one
token per sequence with a vectorised gather of each context from the cache.
Per-step inputs are built once per step (not per layer). On CUDA the same
code runs with SDPA's fused kernels, and decode steps replay CUDA graphs
(`cuda_graph.DecodeGraphs`) when `cuda_graphs` is on (the default on CUDA).
"""

from __future__ import annotations

import torch

from own_engine.attention import PagedAttention, PagedMeta
from own_engine.model import LlamaModel
from own_engine.sampler import Sampler
from own_engine.sequence import Sequence


class ModelRunner:
    def __init__(self, model: LlamaModel, *, num_blocks: int, block_size: int, sampler: Sampler,
                 cuda_graphs: bool = False, max_num_seqs: int = 64) -> None:
        cfg = model.cfg
        self.model = model
        self.device = model.embed_tokens.device
        self.block_size = block_size
        self.sampler = sampler
        # with graphs, one extra block past the BlockManager's range takes the padding rows' writes
        shape = (cfg.num_hidden_layers, num_blocks + int(cuda_graphs), block_size, cfg.num_key_value_heads,
                 cfg.head_dim)
        self.k_cache = torch.zeros(shape, dtype=model.dtype, device=self.device)
        self.v_cache = torch.zeros(shape, dtype=model.dtype, device=self.device)
        self._block_offsets = torch.arange(block_size, device=self.device)
        self.graphs = None
        if cuda_graphs:
            from own_engine.cuda_graph import DecodeGraphs

            self.graphs = DecodeGraphs(model, self.k_cache, self.v_cache, block_size=block_size,
                                       dummy_block=num_blocks, max_batch=max_num_seqs,
                                       max_blocks_per_seq=-(-model.max_model_len // block_size))

    @staticmethod
    def kv_bytes_per_token(model: LlamaModel) -> int:
        cfg = model.cfg
        return 2 * cfg.num_hidden_layers * cfg.kv_size * model.embed_tokens.element_size()

    def _tensor(self, values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long).to(self.device, non_blocking=True)

    def _block_tables(self, seqs: list[Sequence]) -> torch.Tensor:
        """[B, max_blocks] block tables, padded with block 0 (masked out or sliced off by the attention)."""
        width = max(len(s.block_table) for s in seqs)
        flat = [b for s in seqs for b in s.block_table + [0] * (width - len(s.block_table))]
        return self._tensor(flat).view(len(seqs), width)

    def _slots(self, seqs: list[Sequence]) -> torch.Tensor:
        """[B, max_blocks * block_size] slot of every position of each sequence."""
        bt = self._block_tables(seqs)
        return (bt[:, :, None] * self.block_size + self._block_offsets).view(len(seqs), -1)

    def prepare_prefill(self, seqs: list[Sequence]) -> tuple[torch.Tensor, torch.Tensor, PagedMeta, torch.Tensor]:
        ids: list[int] = []
        positions: list[int] = []
        cu = [0]
        for seq in seqs:
            ids.extend(seq.token_ids)
            positions.extend(range(len(seq)))
            cu.append(cu[-1] + len(seq))
        slots = self._slots(seqs)
        slot_mapping = torch.cat([slots[i, : len(s)] for i, s in enumerate(seqs)])
        meta = PagedMeta(is_prefill=True, slot_mapping=slot_mapping, cu_seqlens=cu)
        return self._tensor(ids), self._tensor(positions), meta, self._tensor([c - 1 for c in cu[1:]])

    def prepare_decode(self, seqs: list[Sequence]) -> tuple[torch.Tensor, torch.Tensor, PagedMeta, None]:
        bs = self.block_size
        lens = [len(s) for s in seqs]
        max_len = max(lens)
        lens_t = self._tensor(lens)
        # the newest token (position len-1) is written by this step
        slot_mapping = self._tensor([s.block_table[(n - 1) // bs] * bs + (n - 1) % bs
                                     for s, n in zip(seqs, lens, strict=True)])
        mask = None
        if min(lens) != max_len:
            mask = (torch.arange(max_len, device=self.device)[None, :] < lens_t[:, None])[:, None, None, :]
        meta = PagedMeta(is_prefill=False, slot_mapping=slot_mapping, block_tables=self._block_tables(seqs),
                         max_len=max_len, mask=mask)
        return self._tensor([s.last_token for s in seqs]), lens_t - 1, meta, None

    @torch.inference_mode()
    def run(self, seqs: list[Sequence], is_prefill: bool) -> list[int]:
        if not is_prefill and self.graphs is not None and self.graphs.fits(seqs):
            return self.sampler(self.graphs.run(seqs), seqs)
        ids, positions, meta, logits_idx = (self.prepare_prefill if is_prefill else self.prepare_decode)(seqs)
        logits = self.model(ids, positions, PagedAttention(self.k_cache, self.v_cache, meta), logits_idx)
        return self.sampler(logits, seqs)
