"""The defaults a runner takes where the `EngineConfig` leaves a size unset: the per-step token budget and the
KV cache's size in blocks, and the shares of memory the cache may take.

`ModelRunner` passes the memory it finds available; `SimRunner` allocates no cache memory and passes none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from own_engine.core.engine_config import EngineConfig
    from own_engine.model.llama import LlamaModel

# The per-step token budget, decode rows and prefill tokens together (docs/engines.md, "Prefill chunks"). On CPU
# a decode step reads the weights once and a prefill token computes with them, so one decode step is worth a
# fixed number of prefill tokens whatever the model (about 2 x FLOP/s / bandwidth); 256 keeps a step that
# carries prompt tokens within about 3x the median request's time per token, and the budget is at least
# max_num_seqs + 64, room for a chunk at full batch. On a GPU (and a simulated one) 2048: vLLM's default below
# 70 GiB, SGLang's below 35 GiB. The measurements behind them: benchmarks/history/own_engine.md.
CPU_TOKEN_BUDGET = 256
CPU_CHUNK_TOKENS_PAST_DECODES = 64
GPU_TOKEN_BUDGET = 2048
DEFAULT_KV_FRACTION_CPU = 0.5  # of available RAM: an upper bound only, pages cost memory once used
DEFAULT_KV_FRACTION_CUDA = 0.8  # of free GPU memory after the weights (activations and graphs need the rest)


def kv_bytes_per_token(model: LlamaModel) -> int:
    """Bytes of K and V one token takes in the cache, over all layers."""
    cfg = model.cfg
    return 2 * cfg.num_hidden_layers * cfg.kv_size * model.embed_tokens.element_size()


def default_token_budget(on_gpu: bool, max_num_seqs: int) -> int:
    """The per-step token budget when none is given (see GPU_TOKEN_BUDGET)."""
    if on_gpu:
        return max(GPU_TOKEN_BUDGET, max_num_seqs)
    return max(CPU_TOKEN_BUDGET, max_num_seqs + CPU_CHUNK_TOKENS_PAST_DECODES)


def kv_cache_blocks(config: EngineConfig, model: LlamaModel, memory: tuple[int, float] | None) -> int:
    """KV blocks: `num_kv_blocks` as given, else `kv_cache_gb`'s worth, else room for max_num_seqs sequences of
    max_model_len tokens, capped by `memory` (bytes available, the share the cache may take) where one is given."""
    if config.num_kv_blocks is not None:
        return config.num_kv_blocks
    per_block = kv_bytes_per_token(model) * config.block_size
    if config.kv_cache_gb is not None:
        return max(1, int(config.kv_cache_gb * 2**30) // per_block)
    per_seq = -(-model.max_model_len // config.block_size)
    if memory is None:
        return config.max_num_seqs * per_seq
    available, fraction = memory
    by_memory = int(fraction * available) // per_block
    if by_memory < per_seq:
        raise ValueError(f"a KV cache of {fraction:g} x {available / 2**30:.1f} GiB available holds "
                         f"{by_memory * config.block_size} tokens, less than one sequence of max_model_len "
                         f"{model.max_model_len}; lower max_model_len or raise kv_cache_memory_fraction")
    return min(by_memory, config.max_num_seqs * per_seq)
