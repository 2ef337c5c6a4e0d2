"""Sampler: next-token choice from fp32 logits, per sequence's SamplingParams.

Greedy rows take one batched argmax. Sampled rows apply temperature, top-k
and top-p, then draw with the sequence's own seeded generator (or the
engine's). EOS is masked while a sequence has fewer than `min_tokens` tokens.
"""

from __future__ import annotations

import torch

from own_engine.core.host_tensors import to_device
from own_engine.core.sequence import Sequence


class Sampler:
    def __init__(self, eos_token_ids: tuple[int, ...], seed: int = 0) -> None:
        self.eos = list(eos_token_ids)
        self.generator = torch.Generator().manual_seed(seed)
        self._eos_ids: dict[torch.device, torch.Tensor] = {}  # the EOS ids as a tensor, per device, made once

    def __call__(self, logits: torch.Tensor, seqs: list[Sequence]) -> list[int]:
        """logits [N, vocab] fp32, one row per sequence -> N token ids."""
        assert logits.shape[0] == len(seqs)
        self._mask_eos(logits, seqs)
        out = logits.argmax(dim=-1).tolist()
        for i, seq in enumerate(seqs):
            if not seq.params.greedy:
                out[i] = self._sample(logits[i].cpu(), seq)
        return out

    def on_device(self, logits: torch.Tensor, seqs: list[Sequence]) -> torch.Tensor:
        """The N token ids as a long tensor on the logits' device, without waiting for the device when every row
        is greedy (overlap scheduling); a sampled row is drawn on the host, so that step waits."""
        assert logits.shape[0] == len(seqs)
        if all(s.params.greedy for s in seqs):
            self._mask_eos(logits, seqs)
            return logits.argmax(dim=-1)
        return torch.tensor(self(logits, seqs), dtype=torch.long, device=logits.device)

    def _mask_eos(self, logits: torch.Tensor, seqs: list[Sequence]) -> None:
        """EOS cannot be chosen by a row whose sequence has fewer than min_tokens completion tokens."""
        if self.eos:
            rows = [i for i, s in enumerate(seqs) if s.num_completion_tokens < s.params.min_tokens]
            if rows:
                dev = logits.device
                eos = self._eos_ids.get(dev)
                if eos is None:
                    eos = self._eos_ids[dev] = torch.tensor(self.eos, device=dev)
                if len(rows) == len(seqs):  # every row (a benchmark's exact lengths): one op, no row index
                    logits.index_fill_(1, eos, float("-inf"))
                else:
                    # built on the host, copied without a wait: `torch.tensor(..., device=cuda)` syncs the stream
                    index = to_device(torch.tensor(rows), dev)
                    logits[index[:, None], eos[None, :]] = float("-inf")

    def _sample(self, row: torch.Tensor, seq: Sequence) -> int:
        p = seq.params
        row = row / p.temperature
        if p.top_k and p.top_k < row.shape[0]:
            kth = torch.topk(row, p.top_k).values[-1]
            row = row.masked_fill(row < kth, float("-inf"))
        probs = torch.softmax(row, dim=-1)
        if p.top_p < 1.0:
            sorted_p, idx = torch.sort(probs, descending=True)
            drop = sorted_p.cumsum(0) - sorted_p > p.top_p  # keep the smallest prefix whose mass reaches top_p
            probs = probs.index_fill(0, idx[drop], 0.0)
        gen = self.generator
        if p.seed is not None:
            if seq.generator is None:
                seq.generator = torch.Generator().manual_seed(p.seed)
            gen = seq.generator
        return int(torch.multinomial(probs, 1, generator=gen))
