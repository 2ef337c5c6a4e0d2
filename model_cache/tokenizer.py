"""Build a model's tokenizer offline, trained with `tokenizers` on text the package ships, in one of the families
real checkpoints use.

Kinds (`TOKENIZER_KINDS`):
- `bpe-gpt2`: byte-level BPE with GPT-2's pre-tokenizer (advisor's original tokenizer);
- `bpe-llama3`: byte-level BPE split by Llama-3's regex, `ignore_merges`, BOS added (as Llama-3 ships);
- `bpe-qwen2`: byte-level BPE split by Qwen2's regex (single digits), NFC-normalised (as Qwen2 ships);
- `spm-bpe`: SentencePiece-style BPE with byte fallback (Llama-2, Mistral, TinyLlama; `model_cache.tokenizer_spm`);
- `unigram`, `wordlevel`: the other two `tokenizers` models (`model_cache.tokenizer_spm`), for refusal tests.

Every token a model made by `advisor models create` can emit decodes to
complete, printable text (servers never hold back partial UTF-8): alphabets
are printable ASCII plus, for the byte-level kinds and the byte fallback of
`spm-bpe`, all 256 bytes (as real tokenizers hold them); the model's LM-head
rows of the unprintable ones are zero (`model_cache.create`). Text beyond the shipped corpus is synthesised
deterministically (pseudo-words from a seeded generator) until the model can
reach the requested vocab size.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Literal

TokenizerKind = Literal["bpe-gpt2", "bpe-llama3", "bpe-qwen2", "spm-bpe", "unigram", "wordlevel"]
TOKENIZER_KINDS: tuple[TokenizerKind, ...] = ("bpe-gpt2", "bpe-llama3", "bpe-qwen2", "spm-bpe", "unigram", "wordlevel")

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
SPECIAL_TOKENS = (BOS, EOS, PAD)  # ids 0, 1, 2 of the byte-level kinds
_PRINTABLE = [chr(c) for c in range(0x20, 0x7F)] + ["\n"]
_CONSONANTS = "bcdfghjklmnprstvwz"
_VOWELS = "aeiou"

# pre-tokenizer split patterns exactly as the published tokenizer.json files spell them
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")


@dataclass(frozen=True)
class TokenizerSpec:
    """A kind's special tokens (ids 0..n-1, in this order) and which of them are BOS/EOS/PAD/UNK."""

    kind: TokenizerKind
    specials: tuple[str, ...]
    bos: str
    eos: str
    pad: str | None = None
    unk: str | None = None
    add_bos: bool = False  # the tokenizer prepends BOS when encoding (its post-processor)

    def id_of(self, token: str | None) -> int | None:
        return None if token is None else self.specials.index(token)


SPECS: dict[str, TokenizerSpec] = {
    "bpe-gpt2": TokenizerSpec("bpe-gpt2", SPECIAL_TOKENS, BOS, EOS, PAD),
    "bpe-llama3": TokenizerSpec("bpe-llama3", ("<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad_id|>"),
                                "<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad_id|>", add_bos=True),
    "bpe-qwen2": TokenizerSpec("bpe-qwen2", ("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
                               "<|endoftext|>", "<|endoftext|>", "<|endoftext|>"),
    "spm-bpe": TokenizerSpec("spm-bpe", ("<unk>", "<s>", "</s>"), "<s>", "</s>", unk="<unk>", add_bos=True),
    "unigram": TokenizerSpec("unigram", ("<unk>", "<s>", "</s>"), "<s>", "</s>", unk="<unk>", add_bos=True),
    "wordlevel": TokenizerSpec("wordlevel", ("<unk>", "<s>", "</s>"), "<s>", "</s>", unk="<unk>"),
}


def load_tokenizer(path: str | Path, *, required: bool = False):  # -> tokenizers.Tokenizer | None
    """A model's tokenizer: `path` is its folder (tokenizer.json inside) or the tokenizer.json file itself.

    The one loader every engine, converter and command uses. Missing file: None, or FileNotFoundError
    naming where it looked when `required`.
    """
    p = Path(path).expanduser()
    file = p / "tokenizer.json" if p.is_dir() else p
    if not file.is_file():
        if required:
            raise FileNotFoundError(f"no tokenizer.json at {file}")
        return None
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(file))


def tokenizer_spec(kind: str) -> TokenizerSpec:
    """The kind's specials; a ValueError listing the valid kinds otherwise."""
    if kind not in SPECS:
        raise ValueError(f"unknown tokenizer kind '{kind}'; choose one of: {', '.join(TOKENIZER_KINDS)}")
    return SPECS[kind]


def shipped_corpus() -> str:
    return files("model_cache").joinpath("data/corpus.txt").read_text(encoding="ascii")


def synthetic_lines(vocab_size: int, seed: int) -> list[str]:
    """Deterministic pseudo-words: enough distinct pairs for `vocab_size` merges."""
    rng = random.Random(seed)
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS] + list(_VOWELS)
    n_words = 3 * vocab_size
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(n_words)]
    words += [str(rng.randint(0, 99999)) for _ in range(vocab_size // 8)]
    words += ["".join(rng.choice(_PRINTABLE[:-1]) for _ in range(rng.randint(2, 5))) for _ in range(vocab_size // 4)]
    return [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)]


def training_lines(vocab_size: int, seed: int) -> list[str]:
    return shipped_corpus().splitlines() * 4 + synthetic_lines(vocab_size, seed)


def byte_level(spec: TokenizerSpec, vocab_size: int, seed: int):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte_map = {chr(b): ch for b, ch in zip(range(256), _byte_chars(), strict=True)}
    # all 256 bytes, as real byte-level tokenizers hold (a narrower alphabet silently drops other text, and
    # llama.cpp drops it differently); the model never emits the unprintable ones (zero LM-head rows)
    initial = _byte_chars()
    assert all(byte_map[c] in initial for c in _PRINTABLE)
    assert all(c in alphabet for c in initial)
    tok = Tokenizer(models.BPE(ignore_merges=spec.kind == "bpe-llama3"))
    if spec.kind == "bpe-gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        pattern = LLAMA3_PATTERN if spec.kind == "bpe-llama3" else QWEN2_PATTERN
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    if spec.kind == "bpe-qwen2":
        tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(spec.specials),
                                  initial_alphabet=initial, limit_alphabet=len(initial), min_frequency=1,
                                  show_progress=False)
    tok.train_from_iterator(training_lines(vocab_size, seed), trainer=trainer)
    if spec.add_bos:
        add_bos_template(tok, spec)
    got = tok.get_vocab_size()
    assert got == vocab_size, f"tokenizer reached {got} tokens, wanted {vocab_size}"
    return tok


def add_bos_template(tok, spec: TokenizerSpec) -> None:
    """Prepend BOS on encode, as Llama-2/Llama-3 tokenizers do (a TemplateProcessing post-processor)."""
    from tokenizers import processors

    bos_id = spec.id_of(spec.bos)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{spec.bos} $A", pair=f"{spec.bos} $A {spec.bos} $B", special_tokens=[(spec.bos, bos_id)])


def _byte_chars() -> list[str]:
    """GPT-2's byte-to-unicode table, indexed by byte value."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs, strict=True))
    return [chr(table[b]) for b in range(256)]


def tokenizer_config(model_max_length: int, kind: str = "bpe-gpt2") -> dict:
    """tokenizer_config.json so `transformers.AutoTokenizer` loads the folder offline."""
    spec = tokenizer_spec(kind)
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": spec.bos, "eos_token": spec.eos,
           "model_max_length": model_max_length, "clean_up_tokenization_spaces": False,
           "add_bos_token": spec.add_bos, "add_eos_token": False}
    if spec.pad is not None:
        cfg["pad_token"] = spec.pad
    if spec.unk is not None:
        cfg["unk_token"] = spec.unk
    return cfg


def special_tokens_map(kind: str = "bpe-gpt2") -> dict:
    spec = tokenizer_spec(kind)
    out = {"bos_token": spec.bos, "eos_token": spec.eos}
    if spec.pad is not None:
        out["pad_token"] = spec.pad
    if spec.unk is not None:
        out["unk_token"] = spec.unk
    return out
