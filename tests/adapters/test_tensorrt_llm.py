"""TensorRT-LLM: request mapping always; the engine itself only where tensorrt_llm and a GPU exist."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

import adapters
from adapters.base import RequestSpec
from adapters.tensorrt_llm import sampling_kwargs

HAVE_TRTLLM = importlib.util.find_spec("tensorrt_llm") is not None


def test_exact_length_and_greedy_map_to_trtllm_sampling_params():
    kw = sampling_kwargs(RequestSpec(request_id="a", prompt_ids=(1, 2), max_tokens=64))
    assert kw == {"max_tokens": 64, "ignore_eos": True, "detokenize": True, "min_tokens": 64, "top_k": 1}
    kw = sampling_kwargs(RequestSpec(request_id="b", prompt_ids=(1,), max_tokens=8, ignore_eos=False,
                                     temperature=0.7, top_p=0.9, top_k=40, seed=3))
    assert kw == {"max_tokens": 8, "ignore_eos": False, "detokenize": True, "temperature": 0.7, "top_p": 0.9,
                  "top_k": 40, "seed": 3}


@pytest.mark.skipif(HAVE_TRTLLM, reason="tensorrt_llm is installed here")
def test_registry_says_why_it_is_unavailable():
    why = adapters.why_unavailable("tensorrt_llm")
    assert why is not None and "tensorrt_llm" in why and "trtllm" in why


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_TRTLLM, reason="tensorrt_llm is not installed (NVIDIA index + CUDA GPU only)")
def test_streams_exact_length_on_a_tiny_model(tmp_path):
    from adapters.tensorrt_llm import TensorRTLLMAdapter
    from model_cache.create import create_model

    model = create_model("tiny-trt", "tiny", root=tmp_path, dtype="float16")
    adapter = TensorRTLLMAdapter(str(model), dtype="float16")
    info = adapter.start()
    try:
        assert info.engine == "TensorRT-LLM"

        async def go() -> list[int]:
            req = RequestSpec(request_id="t", prompt_ids=(5, 6, 7, 8), max_tokens=16)
            return [c.n_tokens async for c in adapter.stream(req)]
        counts = asyncio.run(go())
    finally:
        adapter.close()
    assert sum(counts) == 16
