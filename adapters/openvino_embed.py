"""OpenVINO as an embedding engine: the same ONNX graphs advisor converts for ONNX Runtime (`adapters.formats.st_onnx`),
read and compiled by OpenVINO for the CPU.

fp32 is the fp32 graph; int8 is the int8 graph ONNX Runtime's dynamic quantisation wrote (its integer
matrix products run as OpenVINO's own int8 ops). Everything else (tokenizer, token counts, the length
refusal, one request at a time on one engine thread) is `adapters.onnxruntime_embed`'s. OpenVINO's own
CPU hint for inference precision is set to f32, so an fp32 graph is computed in fp32 (the CPU plugin
would otherwise pick bf16 on CPUs that have it).
"""

from __future__ import annotations

from typing import Any, ClassVar

from adapters.onnxruntime_embed import OnnxRuntimeEmbedAdapter


class OpenVinoEmbedAdapter(OnnxRuntimeEmbedAdapter):
    name: ClassVar[str] = "openvino-embed"

    def _load(self, onnx_file: Any) -> tuple[str, str]:
        import openvino as ov

        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "f32"}
        if self.options.threads:
            config["INFERENCE_NUM_THREADS"] = int(self.options.threads)
        self._session = ov.Core().compile_model(str(onnx_file), "CPU", config)
        return "OpenVINO", ov.__version__

    def _infer(self, feed: dict[str, Any]) -> Any:
        return self._session(feed)[0]
