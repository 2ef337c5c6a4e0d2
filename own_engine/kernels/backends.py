"""Which kernel backend runs the model, chosen once at load (`choose`), and the native kernels' checks.

The model calls one linear interface (each layer's `Linear`, `PackedLinear` or `PanelLinear`: `module(x)`) and
one decoder stack (`LlamaModel.decoder`); the attention over the paged cache reads its kernels from the step's
metadata. `choose` fills these in once, after loading, and nothing asks again. Each backend has one decode
route (`paged_attention.decode_route`, fixed when the model runner is built, never per step):

| backend | linears | decoder stack over the paged cache | decode route | prefill chunks |
|---|---|---|---|---|
| native C (CPU fp32, AVX-512F, even head size) | `panel_linear.PanelLinear` | `native_layer.NativeLayers` | `native` | `native_chunk_attention` |
| oneDNN (CPU fp32) | `cpu_linear.PackedLinear` | `llama.torch_layers` | `sdpa-runs` | SDPA |
| torch on CPU (any dtype) | `llama.Linear` (`F.linear`) | `llama.torch_layers` | `sdpa-runs` | SDPA |
| torch on CUDA | `llama.Linear` | `llama.torch_layers` | `sdpa-padded` | SDPA |
| CUDA graphs (CUDA) | the torch backend's | the torch backend's, captured per batch size (`cuda_graph`) | `sdpa-padded`, replayed | SDPA, eager |

- `native`: every decode row's attention by `native_decode_attention` (one call per layer, blocks read in
  place), the rest of each layer by the native layer kernels; a decode-only step runs all layers in one C call
  (`decode_step.c`), a step with prefill chunks a layer at a time: the same units of work bit for bit
  (`native_layer.decode_layers_agree`), so one route whose only difference is the calls from Python.
- `sdpa-runs` (CPU SDPA): no mask, one SDPA per run of decode rows: a row whose blocks are one run of blocks
  alone, in place; consecutive scattered rows of one context length together, gathered. A masked CPU SDPA
  loses its fast kernel (10x slower for 8 sequences with one at 900 tokens); in place one call per sequence
  beats one call over gathered copies, gathered one call beats several (`benchmarks/decode_runs.py`).
- `sdpa-padded` (CUDA, and CUDA graphs, which on CPU run it eagerly): one masked SDPA over the padded batch,
  the fixed shape a graph captures. The graphs replay the torch backend's route: they refuse the native
  kernels (a ValueError: give `linear_kernels` torch or oneDNN with `cuda_graphs` on CPU).

CUDA graphs are the engine's choice (`EngineConfig(cuda_graphs=...)`), made once in `ModelRunner`. A model with an
odd head size (no real RoPE model has one) gets no native backend: `rope_store` rotates halves of a head.

The native kernels are built and loaded by `native.load_native`, which imports none of their users; each
backend module holds its own check against PyTorch on the same probe inputs, and `native_kernels` runs them
all before the engine may use the kernels.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from own_engine.kernels.cpu_linear import LINEAR_KERNELS, cap_primitive_caches, pack_linears
from own_engine.kernels.native import NativeKernels, load_native
from own_engine.kernels.native_layer import NativeLayers, decode_layers_agree, layer_ops_agree
from own_engine.kernels.panel_linear import agrees_with_f_linear
from own_engine.model.llama import LlamaModel
from own_engine.model.paged_attention import native_chunk_agrees, native_decode_agrees

CHECKS = (  # (what, the backend's own check, what it is held to): each on fixed probe inputs
    ("panel_linear", agrees_with_f_linear, "PyTorch"), ("decode_attention", native_decode_agrees, "PyTorch"),
    ("chunk_attention", native_chunk_agrees, "PyTorch"), ("layer ops", layer_ops_agree, "PyTorch"),
    ("decode step", decode_layers_agree, "the per-layer native kernels"))


@functools.cache
def native_kernels() -> NativeKernels | str:
    """The built, loaded and checked native kernels, or why there are none (one line)."""
    kernels = load_native()
    if isinstance(kernels, str):
        return kernels
    for name, agrees, reference in CHECKS:
        if not agrees(kernels):
            return f"own_engine's native {name} disagreed with {reference} on a probe"
    return kernels


@dataclass(frozen=True)
class KernelChoice:
    """What `choose` put behind the model's interfaces."""

    linear: str  # "panel-avx512", "onednn-packed", "torch" or "none (simulated device)"
    num_packed: int  # linears swapped for the chosen kernel's
    note: str | None  # why a faster backend is not used, or None
    attention: NativeKernels | None = None  # the paged attention's native kernels (ModelRunner), or None: SDPA
    native_layers: bool = False  # the decoder stack over the paged cache runs on the native kernels

    def describe(self) -> dict:
        return {"decode_attention": "native" if self.attention is not None else "sdpa",  # chunks too
                "layer_ops": "native" if self.native_layers else "torch"}


SIMULATED = KernelChoice("none (simulated device)", 0, None)


def choose(model: LlamaModel, linear_kernels: str = "auto") -> KernelChoice:
    """Put the backend that runs here behind `model`'s interfaces, once: `linear_kernels` names one ("panel":
    the native kernels; "onednn"; "torch"), and a named one that can't run here is a ValueError; "auto" takes
    the first that can, in that order. Only an fp32 model on CPU has a choice; any other runs on torch."""
    if linear_kernels not in LINEAR_KERNELS:
        raise ValueError(f"linear_kernels must be one of {', '.join(LINEAR_KERNELS)}, got {linear_kernels!r}")
    native: NativeKernels | str = "not asked for"
    if (linear_kernels in ("auto", "panel") and model.embed_tokens.device.type == "cpu"
            and model.dtype == torch.float32):
        cap_primitive_caches()  # before the checks: they may run the process's first oneDNN op
        native = native_kernels()
    if isinstance(native, NativeKernels) and model.cfg.head_dim % 2:
        native = f"own_engine's native kernels need an even head size (RoPE rotates halves), not {model.cfg.head_dim}"
    num_packed, linear, note = pack_linears(model, linear_kernels, native)
    if linear != "panel-avx512":
        return KernelChoice(linear, num_packed, note)
    assert isinstance(native, NativeKernels)
    model.decoder = NativeLayers(native)  # every layer's linears are PanelLinears: the layers run natively
    return KernelChoice(linear, num_packed, note, attention=native, native_layers=True)
