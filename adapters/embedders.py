"""The registry of embedding engines, lazy factories as in `adapters` (importing it imports no engine).

Apart from the generation registry because the contract differs (`adapters.embed_base.EmbedAdapter`: one
answer per request, no stream), so every command, matrix and contract test that walks the generation engines
walks only engines that stream. What the two registries share is written once in `adapters`: the `Entry` type,
why an entry cannot run here (`entry_unavailable`), typed options and their errors (`typed_options`) and the
options' schema (`schema_of`); `advisor engines` lists both, each engine with the tasks it serves.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from adapters import Entry, entry_unavailable, typed_options
from adapters.base import EngineUnavailable
from adapters.embed_base import EmbedAdapter

EMBED_REGISTRY: dict[str, Entry] = {}


def register(entry: Entry) -> None:
    assert entry.name not in EMBED_REGISTRY, entry.name
    EMBED_REGISTRY[entry.name] = entry


def why_unavailable(name: str) -> str | None:
    """None when the embedding engine can be created here, else the reason and the fix."""
    return entry_unavailable(_entry(name))


def adapter_class(name: str) -> type[EmbedAdapter]:
    module_name, cls_name = _entry(name).target.split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    assert issubclass(cls, EmbedAdapter), cls
    return cls


def create(name: str, model: str | None = None, options: Mapping[str, Any] | None = None) -> EmbedAdapter:
    """An embedding adapter by name (not started); EngineUnavailable or OptionsError name the fix."""
    why = why_unavailable(name)
    if why:
        raise EngineUnavailable(f"embedding engine '{name}' is not available here: {why}")
    cls = adapter_class(name)
    return cls(model, typed_options(cls.Options, f"embedding engine '{name}'", options))


def _entry(name: str) -> Entry:
    if name not in EMBED_REGISTRY:
        raise EngineUnavailable(f"unknown embedding engine '{name}'; choose one of: {', '.join(sorted(EMBED_REGISTRY))}")
    return EMBED_REGISTRY[name]


register(Entry("sentence-transformers", "adapters.sentence_transformers_embed:SentenceTransformersAdapter",
               ("sentence_transformers", "torch"), "embed",
               "sentence-transformers (PyTorch) in a process of its own, one request at a time: the naive embedding baseline"))
register(Entry("sentence-transformers-rerank", "adapters.sentence_transformers_embed:SentenceTransformersRerankAdapter",
               ("sentence_transformers", "torch"), "embed",
               "a sentence-transformers CrossEncoder (PyTorch) in a process of its own: the naive rerank baseline"))
register(Entry("openai-rerank", "adapters.openai_rerank:OpenAIRerankAdapter", (), None,
               "any server with the shared rerank API, /v1/rerank (infinity-emb, vLLM, TEI, Cohere-style APIs)"))
register(Entry("openai-embed", "adapters.openai_embed:OpenAIEmbedAdapter", (), None,
               "any server with the OpenAI /v1/embeddings API (infinity-emb, vLLM, TEI, hosted APIs)"))
register(Entry("onnxruntime-embed", "adapters.onnxruntime_embed:OnnxRuntimeEmbedAdapter",
               ("onnxruntime", "onnx", "sentence_transformers", "torch"), "onnx",
               "ONNX Runtime on the model converted by advisor (fp32, or int8 by dynamic quantisation), one request "
               "at a time; the conversion needs sentence-transformers", hint="pip install -e '.[onnx,embed]'"))
register(Entry("openvino-embed", "adapters.openvino_embed:OpenVinoEmbedAdapter",
               ("openvino", "onnxruntime", "onnx", "sentence_transformers", "torch"), "openvino",
               "OpenVINO on the ONNX graphs advisor converts (fp32, int8), one request at a time; the conversion "
               "needs sentence-transformers and ONNX Runtime", hint="pip install -e '.[openvino,onnx,embed]'"))
register(Entry("own-embed", "adapters.own_embed:OwnEmbedAdapter", (), None,
               "own_engine's BERT encoder (advisor's own PyTorch engine, its linear kernels, SDPA) on a "
               "sentence-transformers folder's safetensors, one request at a time; no conversion"))
register(Entry("onnxruntime-rerank", "adapters.onnxruntime_rerank:OnnxRuntimeRerankAdapter",
               ("onnxruntime", "onnx", "sentence_transformers", "torch"), "onnx",
               "ONNX Runtime on the cross-encoder converted by advisor (fp32, or int8 by dynamic quantisation), one "
               "request at a time; the conversion needs sentence-transformers", hint="pip install -e '.[onnx,embed]'"))
register(Entry("openvino-rerank", "adapters.openvino_rerank:OpenVinoRerankAdapter",
               ("openvino", "onnxruntime", "onnx", "sentence_transformers", "torch"), "openvino",
               "OpenVINO on the cross-encoder ONNX graphs advisor converts (fp32, int8), one request at a time; the "
               "conversion needs sentence-transformers and ONNX Runtime", hint="pip install -e '.[openvino,onnx,embed]'"))
