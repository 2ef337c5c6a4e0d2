"""Which tokenizer family a model folder's tokenizer.json is, read from the file itself (no transformers needed).

Families: "byte-level BPE" (GPT-2, Llama-3, Qwen2: BPE over GPT-2's byte
alphabet, split by a pre-tokenizer regex), "SentencePiece-style BPE" (Llama-2,
Mistral, TinyLlama: BPE with byte fallback over ▁-joined text), "Unigram",
"WordLevel", "WordPiece". Converters pick how to write a vocabulary from
this, and every refusal names the family.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.formats.check import ConversionError

GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


@dataclass(frozen=True)
class TokenizerFamily:
    name: str  # "byte-level BPE", "SentencePiece-style BPE", "Unigram", "WordLevel", "WordPiece" or "unknown"
    split_pattern: str | None = None  # byte-level BPE: the regex its pre-tokenizer splits with
    ignore_merges: bool = False
    normalizers: tuple[str, ...] = ()  # type names of the normalizer steps
    has_sentencepiece_model: bool = False  # a tokenizer.model next to tokenizer.json

    def describe(self) -> str:
        extra = f" (normalizer {'+'.join(self.normalizers)})" if self.normalizers else ""
        return f"{self.name}{extra}"


def read_tokenizer_json(model_path: Path) -> dict[str, Any]:
    path = Path(model_path) / "tokenizer.json"
    if not path.is_file():
        raise ConversionError(f"{model_path} has no tokenizer.json; the converted model needs the model's own "
                              "tokenizer (save it with transformers' `tokenizer.save_pretrained`)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConversionError(f"{path} is not valid JSON ({e}); re-create or re-download the model") from e


def detect(model_path: Path) -> TokenizerFamily:
    """The family of `model_path`'s tokenizer.json."""
    tj = read_tokenizer_json(model_path)
    model = tj.get("model") or {}
    kind = model.get("type")
    norms = _types(tj.get("normalizer"))
    spm = (Path(model_path) / "tokenizer.model").is_file()
    if kind == "BPE":
        pre = tj.get("pre_tokenizer")
        if (tj.get("decoder") or {}).get("type") == "ByteLevel" and not model.get("byte_fallback", False):
            return TokenizerFamily("byte-level BPE", _byte_level_pattern(pre), bool(model.get("ignore_merges")),
                                   norms, spm)
        if model.get("byte_fallback", False) or spm:
            return TokenizerFamily("SentencePiece-style BPE", None, bool(model.get("ignore_merges")), norms, spm)
        return TokenizerFamily("BPE without byte-level alphabet or byte fallback", None, False, norms, spm)
    if kind in ("Unigram", "WordLevel", "WordPiece"):
        return TokenizerFamily(str(kind), normalizers=norms, has_sentencepiece_model=spm)
    return TokenizerFamily("unknown", normalizers=norms, has_sentencepiece_model=spm)


def _types(node: dict | None) -> tuple[str, ...]:
    if not node:
        return ()
    if node.get("type") == "Sequence":
        inner = node.get("normalizers") or node.get("pretokenizers") or []
        return tuple(t for n in inner for t in _types(n))
    return (str(node.get("type")),)


def _byte_level_pattern(pre: dict | None) -> str | None:
    """The split regex of a byte-level pre-tokenizer: ByteLevel(use_regex) is GPT-2's; Sequence[Split, ByteLevel]."""
    if not pre:
        return None
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    patterns = []
    for step in steps:
        if step.get("type") == "ByteLevel":
            if step.get("use_regex", True):
                patterns.append(GPT2_PATTERN)
            if step.get("add_prefix_space"):
                patterns.append("<add_prefix_space>")
        elif step.get("type") == "Digits" and step.get("individual_digits"):
            patterns.append(r"\p{N}")  # each digit alone: the same split as Split(\p{N}, Isolated)
        elif step.get("type") == "Split":
            pat = step.get("pattern") or {}
            if step.get("behavior") != "Isolated" or step.get("invert"):
                patterns.append(f"<Split behavior={step.get('behavior')} invert={step.get('invert')}>")
            patterns.append(str(pat.get("Regex", pat.get("String"))))
        else:
            patterns.append(f"<{step.get('type')}>")
    return " + ".join(patterns) if patterns else None


def hf_tokenizer(model_path: Path) -> Any:
    """The folder's tokenizer.json as a transformers tokenizer, exactly as written.

    Not AutoTokenizer: transformers 5 swaps in its own class for some model types (any `qwen2` model gets
    Qwen2Tokenizer and its pipeline, whatever tokenizer.json says), which is not the model's tokenizer.
    """
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(str(model_path))
