"""ONNX Runtime as an embedding engine: a sentence-transformers model converted by advisor (fp32 or int8), in process.

The model folder is converted on first use (`adapters.formats.st_onnx`: the whole module stack as one ONNX
graph, int8 by dynamic quantisation, cached beside the model and checked against sentence-transformers).
Requests are served one at a time, each request's texts as one padded batch, on one engine thread (as the
sentence-transformers baseline: no batching across requests). The model's own tokenizer (`transformers`,
the one sentence-transformers uses) makes the inputs; the attention mask gives the exact token count. An
input longer than the model's `max_seq_length` is refused, never silently truncated. ONNX Runtime releases
the GIL while it computes; tokenisation runs on the engine thread, on the client's interpreter. Each answer
carries the padded batch's tokens (rows x padded length of the attention mask fed to the graph).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from adapters.base import AdapterError, EngineInfo, EngineOptions, EngineUnavailable
from adapters.embed_base import EmbedRequest, EmbedResult, LocalEmbedAdapter


class OnnxRuntimeEmbedOptions(EngineOptions):
    precision: Literal["fp32", "int8"] = Field("fp32", description="ONNX weights: fp32, or int8 (dynamic quantisation)")


class OnnxRuntimeEmbedAdapter(LocalEmbedAdapter):
    name: ClassVar[str] = "onnxruntime-embed"
    Options: ClassVar[type[EngineOptions]] = OnnxRuntimeEmbedOptions
    NOTE: ClassVar[str] = "each request's texts run as one padded batch; requests one at a time"

    def __init__(self, model: str | None, options: EngineOptions | None = None) -> None:
        super().__init__(model, options)
        self._session: Any = None
        self._tok: Any = None
        self._inputs: list[str] = []
        self._max_len = 0

    def _convert(self, folder: Path, precision: str) -> tuple[Any, str]:
        """The cached, checked conversion of `folder` (`adapters.formats.st_onnx`) and its graph's file name."""
        from adapters.formats import st_onnx

        return st_onnx.ensure(folder, precision), st_onnx.FILENAME

    def _load(self, onnx_file: Any) -> tuple[str, str]:
        """Load the converted graph into the engine (self._session); (engine name, its version)."""
        import onnxruntime as ort

        from adapters.formats import st_onnx

        self._session = st_onnx.session(onnx_file, self.options.threads)
        return "ONNX Runtime", ort.__version__

    def _infer(self, feed: dict[str, Any]) -> Any:
        """The graph's first output for one padded batch ([n, dim] embeddings; a cross-encoder's [n] scores)."""
        return self._session.run(None, feed)[0]

    def _open(self, folder: Path) -> EngineInfo:
        from transformers import AutoTokenizer

        from adapters.formats.check import ConversionError

        precision = self.options.precision  # type: ignore[attr-defined]
        try:
            conv, filename = self._convert(folder, precision)
        except ConversionError as e:
            raise EngineUnavailable(str(e)) from None
        self._inputs = list(conv.manifest["inputs"])
        self._max_len = int(conv.manifest["max_seq_length"])
        self._tok = AutoTokenizer.from_pretrained(str(folder))
        engine, version = self._load(conv.path / filename)
        return EngineInfo(adapter=self.name, engine=engine, version=version, device="cpu",
                          model=str(folder), format="onnx", precision=precision, batching="none",
                          threads=self.options.threads or os.cpu_count(), max_batch=1, max_model_len=self._max_len,
                          pid=os.getpid(), convert_s=conv.convert_s,
                          extra={"task": self.tasks[0], "onnx_file": str(conv.path / filename),
                                 "conversion_check": conv.manifest.get("check")},
                          notes=(self.NOTE,))

    def _run_padded(self, enc: Any, limit_line: str) -> tuple[Any, Any]:
        """(attention mask, the graph's output) for one tokenised padded batch; AdapterError("refused") when the
        batch is longer than the model takes (`limit_line` says what to shorten), ("engine") when the graph fails."""
        import numpy as np

        mask = enc["attention_mask"]
        if mask.shape[1] > self._max_len:
            raise AdapterError("refused", limit_line.format(tokens=int(mask.sum(axis=1).max()), limit=self._max_len))
        feed = {k: np.asarray(enc[k], dtype=np.int64) if k in enc else np.zeros_like(mask, dtype=np.int64)
                for k in self._inputs}
        try:
            return mask, self._infer(feed)
        except Exception as e:  # noqa: BLE001 (an engine failure: an errored request, the run goes on)
            raise AdapterError("engine", f"{self.name} failed: {type(e).__name__}: {str(e)[:200]}") from None

    def _compute(self, req: EmbedRequest) -> EmbedResult:
        """One request's texts as one padded batch; the answer carries rows x padded length as its padded tokens."""
        enc = self._tok(list(req.texts), padding=True, truncation=False, return_tensors="np")
        mask, out = self._run_padded(enc, "an input of {tokens} tokens exceeds the model's max_seq_length {limit}; "
                                          "give shorter inputs (chunk_words)")
        vectors = tuple(tuple(v) for v in out.astype(float).tolist()) if req.return_vectors else None
        return EmbedResult(0, len(req.texts), int(mask.sum()), int(out.shape[1]), vectors,
                           n_tokens_padded=int(mask.size))

    def _release(self) -> None:
        self._session = None
