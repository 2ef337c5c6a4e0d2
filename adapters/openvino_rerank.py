"""OpenVINO as a rerank engine: the same cross-encoder ONNX graphs advisor converts for ONNX Runtime
(`adapters.formats.ce_onnx`), read and compiled by OpenVINO for the CPU.

Loading and running the graph (f32 inference precision, the int8 graph's integer products as OpenVINO's own
int8 ops) are `adapters.openvino_embed`'s; the pairs, token counts, the length refusal and one request at a
time are `adapters.onnxruntime_rerank`'s.
"""

from __future__ import annotations

from typing import ClassVar

from adapters.onnxruntime_rerank import OnnxRuntimeRerankAdapter
from adapters.openvino_embed import OpenVinoEmbedAdapter


class OpenVinoRerankAdapter(OpenVinoEmbedAdapter, OnnxRuntimeRerankAdapter):
    """OpenVinoEmbedAdapter's `_load` and `_infer`, OnnxRuntimeRerankAdapter's `_start` and `embed` (the MRO)."""

    name: ClassVar[str] = "openvino-rerank"
    tasks: ClassVar[tuple[str, ...]] = ("rerank",)
