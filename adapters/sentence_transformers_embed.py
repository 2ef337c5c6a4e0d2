"""sentence-transformers (PyTorch) as an embedding engine: the naive baseline.

Requests are served one at a time, each request's texts as one batch (no batching across requests,
as a plain `model.encode` service does). The model's own public API does the work: `tokenize` (whose
attention mask gives the exact token count) then the module stack's forward. It runs on one worker
thread of the client's process, not in a process of its own: PyTorch releases the GIL inside its
kernels, and the load generator records how late each send went out (send lag), so a busy engine
that delays the client shows in the result. An input longer than the model's `max_seq_length` is
refused, never silently truncated.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from adapters.base import AdapterError, EngineInfo, EngineUnavailable, InProcessOptions
from adapters.embed_base import EmbedAdapter, EmbedRequest, EmbedResult


class SentenceTransformersAdapter(EmbedAdapter):
    name = "sentence-transformers"
    Options = InProcessOptions
    served = False

    def __init__(self, model: str | None, options: InProcessOptions | None = None) -> None:
        super().__init__(model, options)
        self._model: Any = None
        self._pool: ThreadPoolExecutor | None = None

    def _start(self) -> EngineInfo:
        import sentence_transformers
        import torch

        from model_cache.model_task import task_mismatch
        from model_cache.resolve import resolve_model

        folder = resolve_model(self.model)
        if (why := task_mismatch(folder, "embed")) is not None:
            raise EngineUnavailable(why)
        device = "cpu" if self.options.device == "auto" else self.options.device
        if self.options.threads:
            torch.set_num_threads(self.options.threads)
        self._model = sentence_transformers.SentenceTransformer(str(folder), device=device)
        self._model.eval()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="st-embed")
        return EngineInfo(adapter=self.name, engine="sentence-transformers", version=sentence_transformers.__version__,
                          device=device, model=str(folder), format="hf-safetensors", precision="fp32",
                          batching="none", threads=torch.get_num_threads(), max_batch=1,
                          max_model_len=int(self._model.max_seq_length),
                          extra={"torch": torch.__version__, "task": "embed"})

    def _encode(self, texts: tuple[str, ...], return_vectors: bool) -> tuple[int, int, Any]:
        import torch
        from sentence_transformers.util import batch_to_device

        m = self._model
        features = m.tokenize(list(texts))
        lengths = features["attention_mask"].sum(dim=1)
        if int(lengths.max()) >= m.max_seq_length:  # the tokenizer cut it at the limit: count it uncut
            full = m.tokenizer(list(texts), truncation=False)["input_ids"]
            longest = max(len(ids) for ids in full)
            if longest > m.max_seq_length:
                raise AdapterError("refused", f"an input of {longest} tokens exceeds the model's max_seq_length "
                                              f"{m.max_seq_length}; give shorter inputs (chunk_words)")
        features = batch_to_device(features, m.device)
        with torch.inference_mode():
            emb = m(features)["sentence_embedding"]
        vectors = emb.float().cpu().tolist() if return_vectors else None
        return int(lengths.sum()), int(emb.shape[1]), vectors

    async def embed(self, req: EmbedRequest) -> EmbedResult:
        assert self._pool is not None, "start() first"
        try:
            n_tokens, dim, vectors = await asyncio.get_running_loop().run_in_executor(
                self._pool, self._encode, req.texts, req.return_vectors)
        except AdapterError:
            raise
        except RuntimeError as e:  # a PyTorch failure inside the model: an errored request, the run goes on
            raise AdapterError("engine", f"{type(e).__name__}: {e}") from e
        t = time.perf_counter_ns()
        return EmbedResult(t, len(req.texts), n_tokens, dim,
                           tuple(tuple(v) for v in vectors) if vectors is not None else None)

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._model = None
