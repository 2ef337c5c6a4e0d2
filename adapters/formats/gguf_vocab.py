"""A model's tokenizer written into GGUF as what it is, with the `gguf` package's maintained vocab code.

- SentencePiece-style BPE (Llama-2, Mistral, TinyLlama) -> llama.cpp's "llama"
  (SPM) vocabulary: `gguf.vocab.SentencePieceVocab` when the folder has
  tokenizer.model (as llama.cpp's convert_hf_to_gguf.py does), else
  `gguf.vocab.LlamaHfVocab` over tokenizer.json (loaded as written, not through
  AutoTokenizer's per-model-type class). LlamaHfVocab gives every
  token the placeholder score -1000, which makes llama.cpp's score-driven SPM
  merging differ from the tokenizer's merge ranks; here each piece scores
  minus the rank of the first merge that makes it, which reproduces the
  merge order exactly when the merges are SentencePiece-complete (as
  transformers writes them). Merges that are not are refused.
- byte-level BPE (GPT-2, Llama-3, Qwen2) -> "gpt2" with the llama.cpp
  pre-tokenizer that implements tokenizer.json's own split regex
  (`PRE_TOKENIZERS`), never one guessed from a hash; an unknown regex is refused.
  Tokens from `gguf.vocab.BpeVocab`, added tokens typed CONTROL/USER_DEFINED as
  llama.cpp's converter types them.
- Unigram, WordLevel, WordPiece: refused, naming the family and what works.

Special tokens, add-BOS/EOS flags and merges go through `gguf.SpecialVocab`.
The result is checked by `adapters.formats.text_check` on mixed text after
conversion; this module only decides how to write it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.formats.check import ConversionError
from adapters.formats.tokenizer_family import (
    GPT2_PATTERN,
    TokenizerFamily,
    detect,
    hf_tokenizer,
    read_tokenizer_json,
)
from fileform import FileForm

# tokenizer.json split regex -> (llama.cpp pre-tokenizer name, the ignore_merges llama.cpp applies for it,
# normalizers llama.cpp does not apply but which leave NFC text unchanged). From llama.cpp's llama-vocab.cpp
# (the "original regex from tokenizer.json" of each pre-type) as vendored in llama-cpp-python 0.3.36.
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
          r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
         r"\s*[\r\n]+|\s+(?!\S)|\s+")
PRE_TOKENIZERS: dict[str, tuple[str, bool]] = {GPT2_PATTERN: ("gpt-2", False), LLAMA3: ("llama-bpe", True),
                                               QWEN2: ("qwen2", False),
                                               # each digit alone, then GPT-2's regex (SmolLM, StarCoder)
                                               r"\p{N} + " + GPT2_PATTERN: ("smollm", False)}
NFC_ONLY = ("NFC",)  # llama.cpp applies no normalizer: NFC input (the usual case) tokenizes the same


@dataclass(frozen=True)
class GgufVocab(FileForm):
    """What was written, for the manifest."""

    family: str
    gguf_model: str  # llama.cpp's tokenizer.ggml.model: "llama" or "gpt2"
    pre: str | None
    source: str  # which gguf.vocab class read it
    caveats: tuple[str, ...] = ()


def refuse(family: TokenizerFamily, why: str) -> ConversionError:
    return ConversionError(f"GGUF cannot hold this {family.describe()} tokenizer faithfully: {why}. llama.cpp "
                           "tokenizes SentencePiece-style BPE (Llama-2/Mistral) and byte-level BPE with the GPT-2, "
                           "Llama-3 or Qwen2 pre-tokenizer; own_engine runs this model (it takes token ids); the onnx and "
                           "openvino formats check their own tokenizers on conversion and may refuse it too")


def write_vocab(wr: Any, model_path: Path, vocab_size: int) -> GgufVocab:
    """Add the tokenizer of `model_path` to the GGUFWriter `wr`, padded to the model's `vocab_size`."""
    import gguf

    logging.getLogger("gguf.vocab").setLevel(logging.ERROR)  # its info lines would flood the convert command
    family = detect(model_path)
    if family.name == "SentencePiece-style BPE":
        tokens, scores, types, source = _spm(model_path, family)
        result = GgufVocab(family.name, "llama", "default", source)
        wr.add_tokenizer_model("llama")
        wr.add_tokenizer_pre("default")
    elif family.name == "byte-level BPE":
        pre, caveats = _pre_tokenizer(family)
        tokens, types = _byte_level(model_path)
        scores = None
        result = GgufVocab(family.name, "gpt2", pre, "gguf.vocab.BpeVocab", caveats)
        wr.add_tokenizer_model("gpt2")
        wr.add_tokenizer_pre(pre)
    else:
        raise refuse(family, f"llama.cpp has no {family.name} tokenizer it can be written as")
    if len(tokens) > vocab_size:
        raise ConversionError(f"the tokenizer has {len(tokens)} tokens but the model's vocab_size is {vocab_size}")
    for i in range(len(tokens), vocab_size):  # embedding rows past the tokenizer: unused, as llama.cpp pads
        tokens.append(f"[PAD{i}]".encode())
        types.append(int(gguf.TokenType.UNUSED))
        if scores is not None:
            scores.append(-1e9)
    wr.add_token_list(tokens)
    if scores is not None:
        wr.add_token_scores(scores)
    wr.add_token_types(types)
    special = gguf.SpecialVocab(model_path, load_merges=family.name == "byte-level BPE", n_vocab=vocab_size)
    special.add_to_gguf(wr, quiet=True)
    return result


def _pre_tokenizer(family: TokenizerFamily) -> tuple[str, tuple[str, ...]]:
    if family.split_pattern not in PRE_TOKENIZERS:
        raise refuse(family, f"no llama.cpp pre-tokenizer splits text with {family.split_pattern!r} (llama.cpp names "
                             "pre-tokenizers by hashing a check string's tokens, which never matches a vocabulary "
                             "trained elsewhere, so advisor maps the split regex itself and knows: "
                             f"{', '.join(p for p, _ in PRE_TOKENIZERS.values())})")
    pre, ignore_merges = PRE_TOKENIZERS[family.split_pattern]
    if family.ignore_merges != ignore_merges:
        raise refuse(family, f"llama.cpp's '{pre}' pre-tokenizer {'ignores' if ignore_merges else 'applies'} merges "
                             f"for words already in the vocab, this tokenizer does the opposite")
    caveats: tuple[str, ...] = ()
    if family.normalizers == NFC_ONLY:
        caveats = ("the tokenizer's NFC normalizer is not applied by llama.cpp: NFC text (the usual case) "
                   "tokenizes the same, text in another Unicode normal form may not",)
    elif family.normalizers:
        raise refuse(family, f"llama.cpp does not apply the normalizer(s) {', '.join(family.normalizers)}")
    return pre, caveats


def _byte_level(model_path: Path) -> tuple[list[bytes], list[int]]:
    """Token texts from gguf.vocab.BpeVocab; tokenizer.json's added tokens typed as llama.cpp's converter does."""
    import gguf
    from gguf.vocab import BpeVocab

    vocab = BpeVocab(model_path)
    tokens: list[bytes] = []
    types: list[int] = []
    for text, _, typ in vocab.all_tokens():
        tokens.append(text if isinstance(text, bytes) else str(text).encode())
        types.append(int(typ))
    for added in read_tokenizer_json(model_path).get("added_tokens", []):
        i = int(added["id"])
        if i < len(types):
            types[i] = int(gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED)
    return tokens, types


def _spm(model_path: Path, family: TokenizerFamily) -> tuple[list[bytes], list[float], list[int], str]:
    if family.has_sentencepiece_model:
        try:
            from gguf.vocab import SentencePieceVocab

            vocab: Any = SentencePieceVocab(model_path)
            source = "gguf.vocab.SentencePieceVocab (tokenizer.model)"
        except RuntimeError as e:  # sentencepiece missing
            raise ConversionError(f"{model_path} has tokenizer.model: reading it needs sentencepiece "
                                  "(pip install -e '.[llamacpp]')") from e
    else:
        vocab = _merge_ranked_vocab(model_path, family)
        source = "gguf.vocab.LlamaHfVocab, scores from merge ranks"
    tokens, scores, types = [], [], []
    for text, score, typ in vocab.all_tokens():
        tokens.append(text)
        scores.append(float(score))
        types.append(int(typ))
    return tokens, scores, types, source


def _merge_ranked_vocab(model_path: Path, family: TokenizerFamily) -> Any:
    from gguf.vocab import LlamaHfVocab

    tj = read_tokenizer_json(model_path)
    vocab_map: dict[str, int] = tj["model"]["vocab"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in tj["model"].get("merges", [])]
    first_rank: dict[str, int] = {}
    last = -1
    for rank, (a, b) in enumerate(merges):
        made = a + b
        first_rank.setdefault(made, rank)
        if first_rank[made] < last:  # a later merge makes a piece an earlier-ranked piece already outranked
            raise refuse(family, f"merge #{rank} ({a!r} + {b!r}) is out of the score order SentencePiece needs")
        last = first_rank[made]
    merge_set = set(merges)
    for piece in first_rank:  # complete: every split of a piece into two pieces must be a merge
        for i in range(1, len(piece)):
            left, right = piece[:i], piece[i:]
            if left in vocab_map and right in vocab_map and (left, right) not in merge_set:
                raise refuse(family, f"its merges are not SentencePiece-complete ({left!r} + {right!r} -> {piece!r} "
                                     "is missing), so llama.cpp's score-based merging would differ; add the model's "
                                     "tokenizer.model to the folder")

    pieces = {i: p for p, i in vocab_map.items()}

    class MergeRankedVocab(LlamaHfVocab):
        """LlamaHfVocab's token texts and types over the tokenizer.json itself, scored by merge rank."""

        def __init__(self, base_path: Path) -> None:  # LlamaHfVocab's set-up, minus AutoTokenizer's class swap
            self.tokenizer = hf_tokenizer(base_path)
            added = sorted(self.tokenizer.get_added_vocab().items(), key=lambda kv: kv[1])
            self.added_tokens_list = [t for t, i in added if i >= self.tokenizer.vocab_size]
            self.added_tokens_dict = {t: i for t, i in added if i >= self.tokenizer.vocab_size}
            self.added_tokens_ids = set(self.added_tokens_dict.values())
            self.specials = {t: self.tokenizer.get_vocab()[t] for t in self.tokenizer.all_special_tokens}
            self.special_ids = set(self.tokenizer.all_special_ids)
            self.vocab_size_base = self.tokenizer.vocab_size
            self.vocab_size = self.vocab_size_base + len(self.added_tokens_list)
            self.fname_tokenizer = base_path / "tokenizer.json"

        def get_token_score(self, token_id: int) -> float:
            piece = pieces.get(token_id)
            return -float(first_rank[piece]) if piece in first_rank else -1e9  # never made by a merge

    try:
        return MergeRankedVocab(model_path)
    except ImportError as e:
        raise ConversionError("writing a SentencePiece-style tokenizer.json into GGUF needs transformers "
                              "(pip install -e '.[llamacpp]')") from e
