"""ONNX Runtime as a rerank engine: a cross-encoder converted by advisor (fp32 or int8), in process.

The model folder is converted on first use (`adapters.formats.ce_onnx`: the `...ForSequenceClassification` model
and the sigmoid `CrossEncoder.predict` applies, as one ONNX graph; int8 by dynamic quantisation; cached beside the
model and checked against sentence-transformers). A request is a query and its passages: the (query, passage)
pairs run as one padded batch, requests one at a time on one engine thread, as the sentence-transformers
rerank baseline. The model's own tokenizer makes the pairs; the attention mask gives the exact token count
(the same count as the baseline's); each answer carries the padded batch's tokens (rows x padded length of
the attention mask fed to the graph). A pair longer than the model's max length is refused, never truncated.
Loading, the engine thread and closing are `adapters.onnxruntime_embed`'s.
"""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

from adapters.base import AdapterError, EngineInfo, EngineUnavailable
from adapters.embed_base import EmbedRequest, EmbedResult
from adapters.onnxruntime_embed import OnnxRuntimeEmbedAdapter


class OnnxRuntimeRerankAdapter(OnnxRuntimeEmbedAdapter):
    name: ClassVar[str] = "onnxruntime-rerank"
    tasks: ClassVar[tuple[str, ...]] = ("rerank",)

    def _start(self) -> EngineInfo:
        from transformers import AutoTokenizer

        from adapters.formats import ce_onnx
        from adapters.formats.check import ConversionError
        from model_cache.model_task import task_mismatch
        from model_cache.resolve import resolve_model

        if self.model is None:
            raise EngineUnavailable(f"the {self.name} engine needs a cross-encoder: give --model (a folder whose "
                                    "config.json names a ...ForSequenceClassification architecture)")
        if self.options.device not in ("auto", "cpu"):
            raise EngineUnavailable(f"the {self.name} engine runs on the CPU only, not {self.options.device}")
        folder = resolve_model(self.model)
        if (why := task_mismatch(folder, "rerank")) is not None:
            raise EngineUnavailable(why)
        precision = self.options.precision  # type: ignore[attr-defined]
        try:
            conv = ce_onnx.ensure(folder, precision)
        except ConversionError as e:
            raise EngineUnavailable(str(e)) from None
        self._inputs = list(conv.manifest["inputs"])
        self._max_len = int(conv.manifest["max_seq_length"])
        self._tok = AutoTokenizer.from_pretrained(str(folder))
        onnx_file = conv.path / ce_onnx.FILENAME
        engine, version = self._load(onnx_file)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"{self.name}-engine")
        return EngineInfo(adapter=self.name, engine=engine, version=version, device="cpu",
                          model=str(folder), format="onnx", precision=precision, batching="none",
                          threads=self.options.threads or os.cpu_count(), max_batch=1, max_model_len=self._max_len,
                          pid=os.getpid(), convert_s=conv.convert_s,
                          extra={"task": "rerank", "onnx_file": str(onnx_file),
                                 "conversion_check": conv.manifest.get("check")},
                          notes=("each request's (query, passage) pairs run as one padded batch; requests one at a "
                                 "time",))

    def _score(self, query: str, passages: list[str], return_scores: bool) -> tuple[int, list[float] | None, int]:
        """(tokens of the pairs, scores or None, tokens of the padded batch) for one request; AdapterError("refused")
        for a pair past the limit."""
        import numpy as np

        enc = self._tok([query] * len(passages), passages, padding=True, truncation=False, return_tensors="np")
        mask = enc["attention_mask"]
        if mask.shape[1] > self._max_len:
            raise AdapterError("refused", f"a query + passage of {int(mask.sum(axis=1).max())} tokens exceeds the "
                                          f"model's max_length {self._max_len}; give shorter passages (passage_words)")
        feed = {k: np.asarray(enc[k], dtype=np.int64) if k in enc else np.zeros_like(mask, dtype=np.int64)
                for k in self._inputs}
        try:
            out = self._infer(feed)
        except Exception as e:  # noqa: BLE001 (an engine failure: an errored request, the run goes on)
            raise AdapterError("engine", f"{self.name} failed: {type(e).__name__}: {str(e)[:200]}") from None
        return (int(mask.sum()), [float(x) for x in np.asarray(out).reshape(-1)] if return_scores else None,
                int(mask.size))

    async def embed(self, req: EmbedRequest) -> EmbedResult:
        if self._session is None or self._pool is None:
            raise AdapterError("engine", f"the {self.name} engine is not started; call start() first")
        if req.query is None:
            raise AdapterError("refused", f"the {self.name} engine reranks (a query and passages); it does not embed")
        loop = asyncio.get_running_loop()
        n_tokens, scores, padded = await loop.run_in_executor(self._pool, self._score, req.query, list(req.texts),
                                                      req.return_vectors)
        t = time.perf_counter_ns()
        return EmbedResult(t, len(req.texts), n_tokens, 1, scores=tuple(scores) if scores is not None else None,
                           n_tokens_padded=padded)
