"""own_engine as an embedding engine: a BERT sentence-transformers folder (all-MiniLM-L6-v2) on own_engine's encoder.

The encoder (`own_engine.model.encoder`) reads the folder's safetensors with own_engine's own reader and runs
the module stack its sentence-transformers files name (BERT, then the pooling, then Normalize when listed); its
linears take the kernel own_engine picks for the decoder (`linear_kernels`), its attention is PyTorch SDPA.
No conversion and no sentence-transformers: the model's tokenizer.json through `tokenizers` (the loader the
openai-embed engine counts tokens with: no truncation, no padding) makes the ids, padded here to the longest
input of the request. Requests are served one at a time, each request's texts as one padded batch, on one
engine thread (as the sentence-transformers baseline and onnxruntime-embed: no batching across requests). An
input longer than the model's `max_seq_length` is refused, never silently truncated. CPU and fp32 only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from adapters.base import AdapterError, EngineInfo, EngineOptions, EngineUnavailable
from adapters.embed_base import EmbedRequest, EmbedResult, LocalEmbedAdapter
from build_info import __version__ as advisor_version


class OwnEmbedOptions(EngineOptions):
    linear_kernels: Literal["auto", "panel", "onednn", "torch"] = Field(
        "auto", description="CPU fp32 linears: panel (own_engine's native AVX-512 kernel, built at first use with "
                            "the C compiler), onednn (packed oneDNN), torch (F.linear); auto: the first that runs here")


class OwnEmbedAdapter(LocalEmbedAdapter):
    name: ClassVar[str] = "own-embed"
    Options: ClassVar[type[EngineOptions]] = OwnEmbedOptions

    def __init__(self, model: str | None, options: EngineOptions | None = None) -> None:
        super().__init__(model, options)
        self._encoder: Any = None
        self._pooling: Any = None
        self._lower = False  # the folder's Transformer module lowercases inputs (sentence_bert_config.json)
        self._tok: Any = None
        self._max_len = 0

    def _open(self, folder: Path) -> EngineInfo:
        import torch

        from adapters.openai_embed import _load_tokenizer
        from own_engine.model.encoder import load_encoder, pick_linears, read_stack
        from own_engine.model.loader import ModelLoadError

        if self.options.threads:
            torch.set_num_threads(self.options.threads)  # process-wide: torch has no per-engine thread pool
        try:
            stack = read_stack(folder)
            self._encoder = load_encoder(folder)
            kernel, n_linears, note = pick_linears(self._encoder, self.options.linear_kernels)  # type: ignore[attr-defined]
        except (ModelLoadError, ValueError) as e:
            raise EngineUnavailable(f"{self.name}: {e}") from None
        cfg = self._encoder.cfg
        self._pooling, self._lower = stack.pooling, stack.do_lower_case
        self._max_len = min(stack.max_seq_length or cfg.max_position_embeddings, cfg.max_position_embeddings)
        self._tok = _load_tokenizer(str(folder))
        return EngineInfo(adapter=self.name, engine="own_engine encoder", version=advisor_version, device="cpu",
                          model=str(folder), format="safetensors", precision="fp32", batching="none",
                          threads=torch.get_num_threads(), max_batch=1, max_model_len=self._max_len, pid=os.getpid(),
                          extra={"task": "embed", "linear_kernels": kernel, "packed_linears": n_linears,
                                 "attention": "sdpa (non-causal, key-padding mask)",
                                 "pooling": self._pooling.mode, "normalize": self._pooling.normalize},
                          notes=("each request's texts run as one padded batch; requests one at a time",
                                 *((f"linears on {kernel}: {note}",) if note else ())))

    def _compute(self, req: EmbedRequest) -> EmbedResult:
        """One request's texts as one batch padded to the longest; its padded tokens are rows x the longest."""
        import torch

        texts = list(req.texts)
        enc = self._tok.encode_batch([t.lower() for t in texts] if self._lower else texts)
        lengths = [len(e.ids) for e in enc]
        if max(lengths) > self._max_len:
            raise AdapterError("refused", f"an input of {max(lengths)} tokens exceeds the model's "
                                          f"max_seq_length {self._max_len}; give shorter inputs (chunk_words)")
        width = max(lengths)
        ids = torch.zeros(len(enc), width, dtype=torch.long)  # padding: id 0, hidden by the mask
        types = torch.zeros_like(ids)
        mask = torch.zeros_like(ids)
        for i, e in enumerate(enc):
            ids[i, :lengths[i]] = torch.tensor(e.ids)
            types[i, :lengths[i]] = torch.tensor(e.type_ids)
            mask[i, :lengths[i]] = 1
        try:
            with torch.inference_mode():
                out = self._pooling(self._encoder(ids, mask, types), mask)
        except Exception as e:  # noqa: BLE001 (an engine failure: an errored request, the run goes on)
            raise AdapterError("engine", f"{self.name} failed: {type(e).__name__}: {str(e)[:200]}") from None
        vectors = tuple(tuple(v) for v in out.double().tolist()) if req.return_vectors else None
        return EmbedResult(0, len(texts), sum(lengths), int(out.shape[1]), vectors, n_tokens_padded=int(ids.numel()))

    def _release(self) -> None:
        self._encoder = None
