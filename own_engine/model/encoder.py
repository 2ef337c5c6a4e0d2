"""A BERT-family sentence encoder (sentence-transformers' all-MiniLM-L6-v2 and its kin) on own_engine's kernels.

The model is BERT as `transformers.BertModel` computes it: word + position + token-type embeddings and a
LayerNorm, then post-LayerNorm blocks (bidirectional attention over the unpadded keys, a GELU MLP), then the
pooling the folder's sentence-transformers modules name (`1_Pooling/config.json`: mean, CLS, max or
mean-sqrt-len) and, when `modules.json` lists a Normalize module, unit length. A batch is padded to its longest
input; the attention mask hides the padding from every key and from the pooling.

Kernels: the linears (q/k/v fused into one, as in the decoder) go through the linear backend own_engine picks
for the decoder (`pick_linears`: own_engine's AVX-512 panel kernel where it builds and passes its checks, fed
`PANEL_ROWS` rows a call; oneDNN packed weights next, plain `F.linear` last; `own_engine.kernels.cpu_linear.pack_linears`). Attention is
PyTorch SDPA, not causal, with a key-padding mask only when the batch has padding (a masked CPU SDPA loses its
fast kernel). own_engine's other native kernels do not fit an encoder: the paged decode and chunk attention are
causal over a KV cache, and the fused native layer ops are the decoder's RMSNorm/RoPE/SwiGLU, not LayerNorm
and GELU. It knows nothing about tokenization, only token ids (the caller tokenizes). Weights are read with
own_engine's own safetensors reader; pickled weights are refused as the decoder's loader refuses them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from own_engine.kernels.backends import native_kernels
from own_engine.kernels.cpu_linear import cap_primitive_caches, pack_linears
from own_engine.kernels.native import NativeKernels
from own_engine.model.attention import sdpa_backends
from own_engine.model.llama import Linear
from own_engine.model.loader import ModelLoadError, safetensors_files
from own_engine.model.safetensors_read import SafetensorsFile, SafetensorsFormatError

PoolingMode = Literal["mean", "cls", "max", "mean_sqrt_len"]
POOLING_MODES: tuple[PoolingMode, ...] = ("mean", "cls", "max", "mean_sqrt_len")
# a Pooling config's v3-5 flags, and v6's `pooling_mode` names, as the encoder's modes (others are refused)
POOLING_FLAGS = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean", "pooling_mode_max_tokens": "max",
                 "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len", "pooling_mode_weightedmean_tokens": "weightedmean",
                 "pooling_mode_lasttoken": "lasttoken"}
POOLING_NAMES = {"mean_sqrt_len_tokens": "mean_sqrt_len"}
GELUS = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}  # config's hidden_act -> F.gelu's approximate
SKIPPED = ("pooler.", "embeddings.position_ids", "cls.")  # BERT's pooler and MLM head: sentence-transformers never uses them


@dataclass(frozen=True)
class EncoderConfig:
    """The fields of a BERT `config.json` the encoder reads; anything it cannot run is refused at load."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    gelu_approximate: str  # F.gelu's `approximate`: "none" (BERT's erf GELU) or "tanh"

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @classmethod
    def from_path(cls, folder: Path) -> EncoderConfig:
        try:
            c = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ModelLoadError(f"{folder}/config.json is missing or not JSON ({e})") from None
        if c.get("model_type") != "bert":
            raise ModelLoadError(f"{folder}: model_type {c.get('model_type')!r}; own_engine's encoder runs BERT models "
                                 "(model_type 'bert', e.g. all-MiniLM-L6-v2)")
        if c.get("position_embedding_type", "absolute") != "absolute":
            raise ModelLoadError(f"{folder}: position_embedding_type {c['position_embedding_type']!r}; the encoder "
                                 "has absolute position embeddings only")
        act = c.get("hidden_act", "gelu")
        if act not in GELUS:
            raise ModelLoadError(f"{folder}: hidden_act {act!r}; the encoder runs {', '.join(GELUS)}")
        cfg = cls(int(c["vocab_size"]), int(c["hidden_size"]), int(c["num_hidden_layers"]),
                  int(c["num_attention_heads"]), int(c["intermediate_size"]), int(c["max_position_embeddings"]),
                  int(c.get("type_vocab_size", 2)), float(c.get("layer_norm_eps", 1e-12)), GELUS[act])
        if cfg.hidden_size % cfg.num_attention_heads:
            raise ModelLoadError(f"{folder}: hidden_size {cfg.hidden_size} is not a multiple of "
                                 f"num_attention_heads {cfg.num_attention_heads}")
        return cfg


class LayerNorm(nn.Module):
    """nn.LayerNorm without its init: weights always come from the loader."""

    def __init__(self, dim: int, eps: float, dtype: torch.dtype) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, dtype=dtype), requires_grad=False)
        self.bias = nn.Parameter(torch.empty(dim, dtype=dtype), requires_grad=False)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


class EncoderLayer(nn.Module):
    """One post-LayerNorm BERT block over flat [B*L, H] tokens."""

    def __init__(self, cfg: EncoderConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.cfg = cfg
        h = cfg.hidden_size
        self.qkv_proj = Linear(h, 3 * h, True, dtype)
        self.o_proj = Linear(h, h, True, dtype)
        self.attn_norm = LayerNorm(h, cfg.layer_norm_eps, dtype)
        self.up_proj = Linear(h, cfg.intermediate_size, True, dtype)
        self.down_proj = Linear(cfg.intermediate_size, h, True, dtype)
        self.out_norm = LayerNorm(h, cfg.layer_norm_eps, dtype)

    def forward(self, x: torch.Tensor, b: int, mask: torch.Tensor | None) -> torch.Tensor:
        """x [B*L, H]; mask [B, 1, 1, L] (True: a real key) or None (no padding) -> [B*L, H]."""
        cfg = self.cfg
        n, h = x.shape
        qkv = self.qkv_proj(x).view(b, n // b, 3, cfg.num_attention_heads, cfg.head_dim).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=mask)  # [B, heads, L, D]
        x = self.attn_norm(x + self.o_proj(o.transpose(1, 2).reshape(n, h)))
        return self.out_norm(x + self.down_proj(F.gelu(self.up_proj(x), approximate=self.cfg.gelu_approximate)))


class BertEncoder(nn.Module):
    """Token ids -> per-token hidden states [B, L, H] (the sentence-transformers Transformer module's output)."""

    def __init__(self, cfg: EncoderConfig, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.cfg = cfg
        self.dtype = dtype  # `pack_linears` reads the model's dtype and embed_tokens' device, as on the decoder
        h = cfg.hidden_size
        self.embed_tokens = nn.Parameter(torch.empty(cfg.vocab_size, h, dtype=dtype), requires_grad=False)
        self.embed_positions = nn.Parameter(torch.empty(cfg.max_position_embeddings, h, dtype=dtype),
                                            requires_grad=False)
        self.embed_token_types = nn.Parameter(torch.empty(cfg.type_vocab_size, h, dtype=dtype), requires_grad=False)
        self.embed_norm = LayerNorm(h, cfg.layer_norm_eps, dtype)
        self.layers = nn.ModuleList(EncoderLayer(cfg, dtype) for _ in range(cfg.num_hidden_layers))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """input_ids, attention_mask (1: a token, 0: padding), token_type_ids: [B, L] -> [B, L, H]."""
        b, length = input_ids.shape
        if length > self.cfg.max_position_embeddings:
            raise ValueError(f"{length} tokens exceed the model's {self.cfg.max_position_embeddings} positions")
        types = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids
        x = (F.embedding(input_ids, self.embed_tokens) + F.embedding(types, self.embed_token_types)
             + self.embed_positions[:length])
        x = self.embed_norm(x).reshape(b * length, -1)
        mask = None if bool(attention_mask.all()) else attention_mask.bool()[:, None, None, :]
        with sdpa_backends(x.device):
            for layer in self.layers:
                x = layer(x, b, mask)
        return x.view(b, length, -1)


@dataclass(frozen=True)
class Pooling:
    """The sentence-transformers modules after the Transformer: one pooling mode, then Normalize or not."""

    mode: PoolingMode
    normalize: bool

    def __call__(self, hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """hidden [B, L, H], attention_mask [B, L] -> sentence embeddings [B, H]."""
        m = attention_mask.to(hidden.dtype).unsqueeze(-1)  # [B, L, 1]
        if self.mode == "cls":
            out = hidden[:, 0]
        elif self.mode == "max":
            out = hidden.masked_fill(m == 0, torch.finfo(hidden.dtype).min).amax(dim=1)
        else:
            total, count = (hidden * m).sum(dim=1), m.sum(dim=1).clamp(min=1e-9)
            out = total / (count if self.mode == "mean" else count.sqrt())
        return F.normalize(out, p=2, dim=1) if self.normalize else out


@dataclass(frozen=True)
class SentenceStack:
    """What a sentence-transformers folder's files say around the BERT: the pooling, the input limit, lowercasing."""

    pooling: Pooling
    max_seq_length: int | None  # None: the files do not say (the model's positions are the limit)
    do_lower_case: bool  # the Transformer module lowercases the text before tokenizing


def read_stack(folder: Path) -> SentenceStack:
    """The module stack of a sentence-transformers folder in either layout: v3-5 (`pooling_mode_*` flags,
    `max_seq_length` in sentence_bert_config.json) or v6 (`pooling_mode`, the limit as the tokenizer's
    `model_max_length`)."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        kinds = {str(m["type"]).rsplit(".", 1)[-1]: str(m.get("path", "")) for m in modules}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ModelLoadError(f"{folder}/modules.json is missing or not a module list ({e})") from None
    unknown = sorted(set(kinds) - {"Transformer", "Pooling", "Normalize"})
    if unknown or kinds.get("Transformer") != "" or "Pooling" not in kinds:
        raise ModelLoadError(f"{folder}: modules {', '.join(kinds)}; the encoder runs a Transformer in the folder "
                             "itself, one Pooling and an optional Normalize")
    try:
        pc = json.loads((folder / kinds["Pooling"] / "config.json").read_text(encoding="utf-8"))
        st = _json_or_empty(folder / "sentence_bert_config.json")
        tc = _json_or_empty(folder / "tokenizer_config.json")
    except (OSError, ValueError) as e:
        raise ModelLoadError(f"{folder}: a sentence-transformers config is missing or not JSON ({e})") from None
    given = pc.get("pooling_mode", [mode for flag, mode in POOLING_FLAGS.items() if pc.get(flag)])
    modes = [POOLING_NAMES.get(m, m) for m in ([given] if isinstance(given, str) else given)]
    if len(modes) != 1 or modes[0] not in POOLING_MODES:
        raise ModelLoadError(f"{folder}/{kinds['Pooling']}/config.json: pooling {modes or 'none'}; the encoder "
                             f"runs exactly one of {', '.join(POOLING_MODES)}")
    limit = st.get("max_seq_length") or tc.get("model_max_length")
    limit = int(limit) if isinstance(limit, int | float) and 0 < limit < 1e9 else None  # 1e30: transformers' "unset"
    return SentenceStack(Pooling(modes[0], "Normalize" in kinds), limit, bool(st.get("do_lower_case")))  # type: ignore[arg-type]


def _json_or_empty(file: Path) -> dict:
    return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}


def load_encoder(folder: str | Path, dtype: torch.dtype = torch.float32) -> BertEncoder:
    """The encoder of a BERT folder (config.json + *.safetensors) on the CPU, every tensor checked."""
    path = Path(folder)
    model = BertEncoder(EncoderConfig.from_path(path), dtype)
    targets = _targets(model)
    seen: set[str] = set()
    for file in safetensors_files(path):
        try:
            with SafetensorsFile(file) as f:
                for name in f.keys():
                    key = name.removeprefix("bert.")
                    if key.startswith(SKIPPED):
                        continue
                    if key not in targets:
                        raise ModelLoadError(f"{file}: unexpected tensor '{name}'; is this a BERT model?")
                    param, start, stop = targets[key]
                    tensor, dst = f.get_tensor(name), (param.data if start is None else param.data[start:stop])
                    if tuple(dst.shape) != tuple(tensor.shape):
                        raise ModelLoadError(f"{file}: tensor '{name}' has shape {tuple(tensor.shape)}, "
                                             f"config.json implies {tuple(dst.shape)}")
                    dst.copy_(tensor)
                    seen.add(key)
        except SafetensorsFormatError as e:
            raise ModelLoadError(f"{file} is not a readable safetensors file ({e}); re-create or re-download it") from None
    missing = sorted(set(targets) - seen)
    if missing:
        raise ModelLoadError(f"{path}: missing tensor(s) {', '.join(missing[:5])}"
                             f"{' ...' if len(missing) > 5 else ''}; the weights do not match config.json")
    return model.eval()


class RowChunks(nn.Module):
    """A panel linear called on at most `rows` rows at a time. The panel kernel was tuned for decode and prefill
    steps of up to a few hundred rows; one call over a whole padded batch is slow: MiniLM on 32 inputs of 128
    words (5,920 rows a linear) ran at 0.77-0.87x sentence-transformers with whole-batch calls and at 1.02x in
    256-row calls, one thread (`benchmarks/embed_engines.py --own-linears onednn`; benchmarks/history/embed.md)."""

    def __init__(self, linear: nn.Module, rows: int) -> None:
        super().__init__()
        self.linear = linear
        self.rows = rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] <= self.rows:
            return self.linear(x)
        return torch.cat([self.linear(x[s:s + self.rows]) for s in range(0, x.shape[0], self.rows)])


PANEL_ROWS = 256  # rows per panel-kernel call: the decoder's CPU prefill budget, where the kernel was tuned


def pick_linears(model: BertEncoder, linear_kernels: str = "auto") -> tuple[str, int, str | None]:
    """Swap the encoder's linears for the backend the decoder would get here (own_engine.kernels.backends'
    order; the panel kernel fed `PANEL_ROWS` rows a call): (the kernel, how many linears, why a faster one is
    not used or None)."""
    native: NativeKernels | str = "not asked for"
    if linear_kernels in ("auto", "panel") and model.embed_tokens.device.type == "cpu" and model.dtype == torch.float32:
        cap_primitive_caches()  # before the checks: they may run the process's first oneDNN op
        native = native_kernels()
    n, kernel, note = pack_linears(model, linear_kernels, native)  # type: ignore[arg-type]  (reads modules, dtype, device)
    if kernel == "panel-avx512":
        for layer in model.layers:
            for name in ("qkv_proj", "o_proj", "up_proj", "down_proj"):
                setattr(layer, name, RowChunks(getattr(layer, name), PANEL_ROWS))
    return kernel, n, note


def _targets(model: BertEncoder) -> dict[str, tuple[nn.Parameter, int | None, int | None]]:
    """Hugging Face BERT tensor name -> (our parameter, row slice start, stop)."""
    h = model.cfg.hidden_size
    t: dict[str, tuple[nn.Parameter, int | None, int | None]] = {
        "embeddings.word_embeddings.weight": (model.embed_tokens, None, None),
        "embeddings.position_embeddings.weight": (model.embed_positions, None, None),
        "embeddings.token_type_embeddings.weight": (model.embed_token_types, None, None),
        "embeddings.LayerNorm.weight": (model.embed_norm.weight, None, None),
        "embeddings.LayerNorm.bias": (model.embed_norm.bias, None, None),
    }
    for i, layer in enumerate(model.layers):
        p = f"encoder.layer.{i}."
        for suffix in ("weight", "bias"):
            fused = getattr(layer.qkv_proj, suffix)
            for j, part in enumerate(("query", "key", "value")):
                t[p + f"attention.self.{part}.{suffix}"] = (fused, j * h, (j + 1) * h)
            t[p + f"attention.output.dense.{suffix}"] = (getattr(layer.o_proj, suffix), None, None)
            t[p + f"attention.output.LayerNorm.{suffix}"] = (getattr(layer.attn_norm, suffix), None, None)
            t[p + f"intermediate.dense.{suffix}"] = (getattr(layer.up_proj, suffix), None, None)
            t[p + f"output.dense.{suffix}"] = (getattr(layer.down_proj, suffix), None, None)
            t[p + f"output.LayerNorm.{suffix}"] = (getattr(layer.out_norm, suffix), None, None)
    return t
