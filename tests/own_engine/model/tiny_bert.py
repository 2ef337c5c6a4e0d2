"""A tiny seeded random BERT sentence-transformers folder written with torch, safetensors and tokenizers alone (no
transformers, no sentence-transformers), and a plain-torch BERT forward over its raw tensors as the reference."""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

WORDS = "the a and of to in he that his was for on is with they be at one have this".split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
HIDDEN, LAYERS, HEADS, INTER, POSITIONS = 32, 2, 4, 64, 64
POOLINGS = {"mean": "mean_tokens", "cls": "cls_token", "max": "max_tokens", "mean_sqrt_len": "mean_sqrt_len_tokens"}


def make_tiny_bert(root: Path, *, seed: int = 0, pooling: str = "mean", normalize: bool = True,
                   max_seq_length: int = 16, prefix: str = "") -> Path:
    """The folder as `SentenceTransformer.save` lays it out; tensor names as BertModel's (`prefix` e.g. 'bert.')."""
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    root.mkdir(parents=True, exist_ok=True)
    vocab = {w: i for i, w in enumerate([*SPECIALS, *WORDS])}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.enable_truncation(8)  # as published tokenizer.json files carry one: the engine must not apply it
    tok.save(str(root / "tokenizer.json"))
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) * 0.2

    t = {"embeddings.word_embeddings.weight": rand(len(vocab), HIDDEN),
         "embeddings.position_embeddings.weight": rand(POSITIONS, HIDDEN),
         "embeddings.token_type_embeddings.weight": rand(2, HIDDEN),
         "embeddings.LayerNorm.weight": 1 + rand(HIDDEN), "embeddings.LayerNorm.bias": rand(HIDDEN),
         "embeddings.position_ids": torch.arange(POSITIONS)[None], "pooler.dense.weight": rand(HIDDEN, HIDDEN),
         "pooler.dense.bias": rand(HIDDEN)}
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name, n_out, n_in in (("attention.self.query", HIDDEN, HIDDEN), ("attention.self.key", HIDDEN, HIDDEN),
                                  ("attention.self.value", HIDDEN, HIDDEN), ("attention.output.dense", HIDDEN, HIDDEN),
                                  ("intermediate.dense", INTER, HIDDEN), ("output.dense", HIDDEN, INTER)):
            t[p + name + ".weight"], t[p + name + ".bias"] = rand(n_out, n_in), rand(n_out)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[p + name + ".weight"], t[p + name + ".bias"] = 1 + rand(HIDDEN), rand(HIDDEN)
    save_file({prefix + k: v.contiguous() for k, v in t.items()}, str(root / "model.safetensors"))
    (root / "config.json").write_text(json.dumps({
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": len(vocab), "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "intermediate_size": INTER, "hidden_act": "gelu",
        "max_position_embeddings": POSITIONS, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0,
        "position_embedding_type": "absolute"}))
    (root / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "unk_token": "[UNK]", "sep_token": "[SEP]",
        "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]", "model_max_length": 512}))
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        (root / "2_Normalize").mkdir(exist_ok=True)
    (root / "modules.json").write_text(json.dumps(modules))
    (root / "1_Pooling").mkdir(exist_ok=True)
    (root / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": HIDDEN, **{f"pooling_mode_{v}": k == pooling for k, v in POOLINGS.items()}}))
    (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length, "do_lower_case": False}))
    return root


def reference_vector(folder: Path, ids: list[int], pooling: str = "mean", normalize: bool = True) -> torch.Tensor:
    """One input, unpadded, through BERT written out op by op from the folder's raw tensors (fp64): [HIDDEN]."""
    from safetensors.torch import load_file

    w = {k.removeprefix("bert."): v.double() for k, v in load_file(str(folder / "model.safetensors")).items()}
    d = HIDDEN // HEADS

    def ln(x: torch.Tensor, name: str) -> torch.Tensor:
        mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-12) * w[name + ".weight"] + w[name + ".bias"]

    def lin(x: torch.Tensor, name: str) -> torch.Tensor:
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    n = len(ids)
    x = ln(w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
           + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q, k, v = (lin(x, p + f"attention.self.{s}").view(n, HEADS, d).transpose(0, 1) for s in ("query", "key", "value"))
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1) @ v  # every key: bidirectional
        x = ln(x + lin(att.transpose(0, 1).reshape(n, HIDDEN), p + "attention.output.dense"), p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))  # BERT's GELU (erf)
        x = ln(x + lin(h, p + "output.dense"), p + "output.LayerNorm")
    out = {"mean": x.mean(0), "cls": x[0], "max": x.max(0).values, "mean_sqrt_len": x.sum(0) / math.sqrt(n)}[pooling]
    return out / out.norm() if normalize else out
