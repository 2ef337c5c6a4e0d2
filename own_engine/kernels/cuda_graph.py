"""DecodeGraphs: fixed-shape decode steps, captured as CUDA graphs on CUDA (one per batch x context bucket).

Per-token kernel launches dominate decode of small models on a GPU; a CUDA
graph replays the whole forward with one launch. Graphs need fixed shapes,
so a step is padded up to a batch bucket and a context bucket (in KV blocks):
padding rows read and write a reserved dummy KV block and attend to one
column only, so they stay finite and touch no real sequence. The engine
captures every bucket at start (`capture_all`, largest first, one shared
memory pool); a bucket still missing is captured on first use. Only
decode-only steps replay graphs; a step with a prefill chunk runs eagerly. On
CPU the same padded path runs eagerly (no capture), which is how the tests
check the padding logic on machines without a GPU.
"""

from __future__ import annotations

from array import array

import torch

from own_engine.core.host_tensors import to_device
from own_engine.core.sequence import Sequence
from own_engine.model.llama import LlamaModel
from own_engine.model.paged_attention import PagedAttention, PagedMeta

BATCH_BUCKETS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256)
MIN_CONTEXT_BUCKET_TOKENS = 256
MAX_GRAPH_CONTEXT_TOKENS = 8192  # longer contexts (and batches past the last bucket) run eagerly


def buckets_up_to(limit: int, candidates: list[int]) -> list[int]:
    return [c for c in candidates if c < limit] + [limit]


class DecodeGraphs:
    def __init__(self, model: LlamaModel, k_cache: torch.Tensor, v_cache: torch.Tensor, *, block_size: int,
                 dummy_block: int, max_batch: int, max_blocks_per_seq: int, triton: bool = False) -> None:
        self.model, self.k_cache, self.v_cache = model, k_cache, v_cache
        self.device = model.embed_tokens.device
        # decode attention by the Triton paged kernel (each row its own blocks), not padded SDPA. Its graphs stay
        # keyed by context bucket too: the table's width sets how the kernel splits a row's context over programs
        # (triton_decode.splits_for), so one full-width graph per batch would run short contexts unsplit
        self.triton = triton
        self.capture = self.device.type == "cuda"
        self.block_size = block_size
        self.dummy_block = dummy_block
        max_batch = min(max_batch, BATCH_BUCKETS[-1])
        max_blocks_per_seq = min(max_blocks_per_seq, -(-MAX_GRAPH_CONTEXT_TOKENS // block_size))
        self.batch_buckets = buckets_up_to(max_batch, list(BATCH_BUCKETS))
        first = -(-MIN_CONTEXT_BUCKET_TOKENS // block_size)
        doubling = [first * 2**i for i in range(20) if first * 2**i < max_blocks_per_seq]
        self.block_buckets = buckets_up_to(max_blocks_per_seq, doubling)
        self.max_batch, self.max_blocks = max_batch, max_blocks_per_seq
        dev, long = self.device, torch.long
        # graph inputs: written before every replay; the captured graph reads them in place
        self.ids = torch.zeros(max_batch, dtype=long, device=dev)
        self.positions = torch.zeros(max_batch, dtype=long, device=dev)
        self.slots = torch.zeros(max_batch, dtype=long, device=dev)
        self.lens = torch.ones(max_batch, dtype=long, device=dev)
        self.block_tables = torch.full((max_batch, max_blocks_per_seq), dummy_block, dtype=long, device=dev)
        self.columns = torch.arange(max_blocks_per_seq * block_size, device=dev)
        self.graphs: dict[tuple[int, int], tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self.pool = None

    def fits(self, seqs: list[Sequence]) -> bool:
        return len(seqs) <= self.max_batch and max(len(s.block_table) for s in seqs) <= self.max_blocks

    def _forward(self, b: int, nb: int) -> torch.Tensor:
        width = nb * self.block_size
        if self.triton:
            meta = PagedMeta(slot_mapping=self.slots[:b], num_decodes=b, block_tables=self.block_tables[:b, :nb],
                             lens=self.lens[:b], triton=True)
            return self.model(self.ids[:b], self.positions[:b], PagedAttention(self.k_cache, self.v_cache, meta))
        mask = (self.columns[:width][None, :] < self.lens[:b, None])[:, None, None, :]
        meta = PagedMeta(slot_mapping=self.slots[:b], num_decodes=b, block_tables=self.block_tables[:b, :nb],
                         max_len=width, mask=mask)
        return self.model(self.ids[:b], self.positions[:b], PagedAttention(self.k_cache, self.v_cache, meta))

    def run(self, seqs: list[Sequence], fix: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """Logits [len(seqs), vocab] of one decode step, padded to its buckets. `fix`: (rows, token ids on the
        device) for rows whose input token is not known on the host yet (overlap scheduling)."""
        n = len(seqs)
        b = next(x for x in self.batch_buckets if x >= n)
        nb = next(x for x in self.block_buckets if x >= max(len(s.block_table) for s in seqs))
        host = to_device(self.inputs(seqs, b, nb), self.device)  # one copy
        self.ids[:b].copy_(host[:b])
        self.positions[:b].copy_(host[b:2 * b])
        self.slots[:b].copy_(host[2 * b:3 * b])
        self.lens[:b].copy_(host[3 * b:4 * b])
        self.block_tables[:b, :nb].copy_(host[4 * b:].view(b, nb))
        if fix is not None:  # in stream order, after the step that sampled them
            self.ids[fix[0]] = fix[1]
        if not self.capture:
            return self._forward(b, nb)[:n]
        if (b, nb) not in self.graphs:
            self._capture(b, nb)
        graph, out = self.graphs[(b, nb)]
        graph.replay()
        return out[:n]

    def inputs(self, seqs: list[Sequence], b: int, nb: int) -> torch.Tensor:
        """The graph's inputs for `seqs` padded to `b` rows and `nb` blocks, as one flat host tensor: ids,
        positions, cache slots and context lengths (b each), then the block tables (b x nb). Built in one
        `array('q')` that the tensor shares: `torch.tensor` on nested lists, or a tensor per row's block table,
        walks every element from Python, which would be the host's largest cost of a replayed step."""
        bs, pad, dummy = self.block_size, b - len(seqs), self.dummy_block
        lens = [len(s) for s in seqs]
        flat = array("q", [s.token_ids[-1] for s in seqs])
        flat.extend([0] * pad)
        flat.extend([x - 1 for x in lens])
        flat.extend([0] * pad)
        flat.extend([s.block_table[(x - 1) // bs] * bs + (x - 1) % bs for s, x in zip(seqs, lens, strict=True)])
        flat.extend([dummy * bs] * pad)
        flat.extend(lens)
        flat.extend([1] * pad)
        for s in seqs:
            flat.extend(s.block_table)
            flat.extend([dummy] * (nb - len(s.block_table)))
        flat.extend([dummy] * (nb * pad))
        return torch.frombuffer(flat, dtype=torch.long)

    def capture_all(self) -> None:
        """Capture every bucket up front, largest first (one shared pool), so no step pays for a capture."""
        if not self.capture:
            return
        # inputs that only touch the dummy block: capture runs the forward once eagerly
        self.ids.zero_()
        self.positions.zero_()
        self.slots.fill_(self.dummy_block * self.block_size)
        self.lens.fill_(1)
        self.block_tables.fill_(self.dummy_block)
        with torch.inference_mode():
            for b in reversed(self.batch_buckets):
                for nb in reversed(self.block_buckets):
                    self._capture(b, nb)

    def _capture(self, b: int, nb: int) -> None:
        self._forward(b, nb)  # warm-up outside the graph (kernels pick their algorithms here)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            out = self._forward(b, nb)
        self.pool = graph.pool() if self.pool is None else self.pool
        self.graphs[(b, nb)] = (graph, out)
