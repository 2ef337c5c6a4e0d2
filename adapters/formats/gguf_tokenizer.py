"""A Hugging Face `tokenizer.json` rebuilt from a GGUF's tokenizer metadata (the reverse of `gguf_vocab`).

A GGUF carries no tokenizer.json: it stores the vocabulary (`tokenizer.ggml.tokens`), token types, merges,
special token ids and the name of llama.cpp's pre-tokenizer (`tokenizer.ggml.pre`). This builds the
`tokenizers` pipeline that splits and merges text the way llama.cpp does for that pre-tokenizer name:

- `tokenizer.ggml.model` "gpt2" (byte-level BPE) only. SentencePiece ("llama"), WordPiece ("bert") and
  the others are refused by name.
- The pre-tokenizer names map to the split regexes llama.cpp's `llama-vocab.cpp` uses for them
  (`PRE_SPLITS`); an unknown name is refused, never guessed: a wrong split tokenizes text differently and
  silently.

Written by hand rather than through transformers' GGUF tokenizer code: that code has no entry for several
pre-tokenizers (`smollm` among them: it would split digits GPT-2's way, not one by one as llama.cpp and
SmolLM's own tokenizer do) and moves between transformers versions. `gguf_import` then checks the result
against llama.cpp's tokenizer on the original file (`text_check`) before the import is declared done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adapters.formats.check import ConversionError
from adapters.formats.gguf_vocab import LLAMA3, QWEN2

# llama.cpp pre-tokenizer name -> (a regex split applied first, or None; whether GPT-2's own regex then splits the
# pieces (ByteLevel use_regex); ignore_merges). From llama-vocab.cpp (llama-cpp-python 0.3.36's vendored llama.cpp).
_DIGITS = r"\p{N}"
_GPT2 = (None, True, False)
_DIGITS_THEN_GPT2 = (_DIGITS, True, False)  # STARCODER, REFACT, COMMAND_R, SMOLLM, CODESHELL, EXAONE, MINERVA
PRE_SPLITS: dict[str, tuple[str | None, bool, bool]] = {
    "default": _GPT2, "gpt-2": _GPT2,
    "smollm": _DIGITS_THEN_GPT2, "starcoder": _DIGITS_THEN_GPT2, "refact": _DIGITS_THEN_GPT2,
    "command-r": _DIGITS_THEN_GPT2, "codeshell": _DIGITS_THEN_GPT2, "exaone": _DIGITS_THEN_GPT2,
    "minerva-7b": _DIGITS_THEN_GPT2,
    "llama3": (LLAMA3, False, True), "llama-v3": (LLAMA3, False, True), "llama-bpe": (LLAMA3, False, True),
    "qwen2": (QWEN2, False, False),
}
CONTROL, USER_DEFINED = 3, 4  # gguf.TokenType


@dataclass(frozen=True)
class GgufTokenizer:
    tokenizer: Any  # tokenizers.Tokenizer
    bos: str | None
    eos: str | None
    pad: str | None
    unk: str | None
    add_bos: bool
    pre: str
    chat_template: str | None

    def config(self, model_max_length: int) -> dict[str, object]:
        """tokenizer_config.json, so transformers loads the folder offline as written."""
        cfg: dict[str, object] = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": model_max_length,
                                  "clean_up_tokenization_spaces": False, "add_bos_token": self.add_bos,
                                  "add_eos_token": False}
        for key, tok in (("bos_token", self.bos), ("eos_token", self.eos), ("pad_token", self.pad),
                         ("unk_token", self.unk)):
            if tok is not None:
                cfg[key] = tok
        if self.chat_template:
            cfg["chat_template"] = self.chat_template
        return cfg


def supported() -> str:
    return f"tokenizer.ggml.model 'gpt2' (byte-level BPE) with pre-tokenizer {', '.join(sorted(PRE_SPLITS))}"


def build(fields: dict[str, Any]) -> GgufTokenizer:
    """The tokenizer described by the GGUF metadata `fields` (name -> value, as `gguf_import.metadata` reads)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    kind = fields.get("tokenizer.ggml.model")
    if kind is None:
        raise ConversionError("the GGUF has no tokenizer (no tokenizer.ggml.model); advisor imports models with "
                              f"their tokenizer: {supported()}")
    if kind != "gpt2":
        raise ConversionError(f"the GGUF's tokenizer is '{kind}'; import builds {supported()}")
    pre = str(fields.get("tokenizer.ggml.pre") or "default")
    if pre not in PRE_SPLITS:
        raise ConversionError(f"the GGUF's pre-tokenizer '{pre}' is not one import knows how to split like "
                              f"llama.cpp; it knows: {', '.join(sorted(PRE_SPLITS))}")
    split, gpt2_regex, ignore_merges = PRE_SPLITS[pre]
    tokens: list[str] = list(fields["tokenizer.ggml.tokens"])
    types: list[int] = [int(t) for t in fields.get("tokenizer.ggml.token_type") or [1] * len(tokens)]
    merges = [tuple(m.split(" ", 1)) for m in fields.get("tokenizer.ggml.merges") or []]
    if not merges:
        raise ConversionError("the GGUF's byte-level vocabulary has no merges (tokenizer.ggml.merges)")
    vocab = {t: i for i, t in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise ConversionError("the GGUF's vocabulary holds the same token text twice; it cannot be a BPE vocabulary")
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False,
                               ignore_merges=ignore_merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=gpt2_regex)
    if split is None:
        tok.pre_tokenizer = byte_level
    elif split == _DIGITS:  # written as SmolLM2's own tokenizer.json does: onnxruntime-genai reads a Split here
        # as if ByteLevel had no regex (3 of 10 texts differ), Digits it reads right; both are \p{N} one by one
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated"),
                                                     byte_level])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, ty in zip(tokens, types, strict=True) if ty == CONTROL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False)
                    for t, ty in zip(tokens, types, strict=True) if ty == USER_DEFINED])

    def special(key: str) -> str | None:
        i = fields.get(f"tokenizer.ggml.{key}_token_id")
        return tokens[int(i)] if i is not None and 0 <= int(i) < len(tokens) else None

    bos = special("bos")
    add_bos = bool(fields.get("tokenizer.ggml.add_bos_token", False)) and bos is not None
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                           special_tokens=[(bos, vocab[bos])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    template = fields.get("tokenizer.chat_template")
    return GgufTokenizer(tok, bos, special("eos"), special("padding"), special("unknown"), add_bos, pre,
                         str(template) if template else None)
