"""ONNX Runtime as a rerank engine: a cross-encoder converted by advisor (fp32 or int8), in process.

The model folder is converted on first use (`adapters.formats.ce_onnx`: the `...ForSequenceClassification` model
and the sigmoid `CrossEncoder.predict` applies, as one ONNX graph; int8 by dynamic quantisation; cached beside the
model and checked against sentence-transformers). A request is a query and its passages: the (query, passage)
pairs run as one padded batch, requests one at a time on one engine thread, as the sentence-transformers
rerank baseline. The model's own tokenizer makes the pairs; the attention mask gives the exact token count
(the same count as the baseline's); each answer carries the padded batch's tokens (rows x padded length of
the attention mask fed to the graph). A pair longer than the model's max length is refused, never truncated.
Loading, the length refusal and the padded batch are `adapters.onnxruntime_embed`'s; the model folder, the engine
thread and closing `adapters.embed_base.LocalEmbedAdapter`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from adapters.embed_base import EmbedRequest, EmbedResult
from adapters.onnxruntime_embed import OnnxRuntimeEmbedAdapter


class OnnxRuntimeRerankAdapter(OnnxRuntimeEmbedAdapter):
    name: ClassVar[str] = "onnxruntime-rerank"
    tasks: ClassVar[tuple[str, ...]] = ("rerank",)
    MODEL_HINT: ClassVar[str] = ("a cross-encoder: give --model (a folder whose config.json names a "
                                 "...ForSequenceClassification architecture)")
    NOTE: ClassVar[str] = "each request's (query, passage) pairs run as one padded batch; requests one at a time"

    def _convert(self, folder: Path, precision: str) -> tuple[Any, str]:
        """The cached, checked cross-encoder conversion (`adapters.formats.ce_onnx`) and its graph's file name."""
        from adapters.formats import ce_onnx

        return ce_onnx.ensure(folder, precision), ce_onnx.FILENAME

    def _compute(self, req: EmbedRequest) -> EmbedResult:
        """The request's (query, passage) pairs as one padded batch: one score per passage, in their order."""
        import numpy as np

        passages = list(req.texts)
        enc = self._tok([req.query] * len(passages), passages, padding=True, truncation=False, return_tensors="np")
        mask, out = self._run_padded(enc, "a query + passage of {tokens} tokens exceeds the model's max_length "
                                          "{limit}; give shorter passages (passage_words)")
        scores = tuple(float(x) for x in np.asarray(out).reshape(-1)) if req.return_vectors else None
        return EmbedResult(0, len(passages), int(mask.sum()), 1, scores=scores, n_tokens_padded=int(mask.size))
