"""Build a byte-level BPE tokenizer offline, trained with `tokenizers` on text the package ships.

The alphabet is printable ASCII plus newline, so every non-special token
decodes to complete, printable text (servers never hold back partial UTF-8).
Text beyond the shipped corpus is synthesised deterministically (pseudo-words
from a seeded generator) until the BPE can reach the requested vocab size.
"""

from __future__ import annotations

import random
from importlib.resources import files

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
SPECIAL_TOKENS = (BOS, EOS, PAD)  # ids 0, 1, 2
_PRINTABLE = [chr(c) for c in range(0x20, 0x7F)] + ["\n"]
_CONSONANTS = "bcdfghjklmnprstvwz"
_VOWELS = "aeiou"


def shipped_corpus() -> str:
    return files("own_engine").joinpath("data/corpus.txt").read_text(encoding="ascii")


def _synthetic_lines(vocab_size: int, seed: int) -> list[str]:
    """Deterministic pseudo-words: enough distinct pairs for `vocab_size` merges."""
    rng = random.Random(seed)
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS] + list(_VOWELS)
    n_words = 3 * vocab_size
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(n_words)]
    words += [str(rng.randint(0, 99999)) for _ in range(vocab_size // 8)]
    words += ["".join(rng.choice(_PRINTABLE[:-1]) for _ in range(rng.randint(2, 5))) for _ in range(vocab_size // 4)]
    return [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)]


def build_tokenizer(vocab_size: int, *, seed: int = 0):  # -> tokenizers.Tokenizer
    """A byte-level BPE with exactly `vocab_size` tokens (specials first: bos=0, eos=1, pad=2)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    byte_map = {chr(b): ch for b, ch in zip(range(256), _byte_chars(), strict=True)}
    initial = [byte_map[c] for c in _PRINTABLE]
    assert all(c in alphabet for c in initial)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=initial, limit_alphabet=len(initial), min_frequency=1,
                                  show_progress=False)
    lines = shipped_corpus().splitlines() * 4 + _synthetic_lines(vocab_size, seed)
    tok.train_from_iterator(lines, trainer=trainer)
    got = tok.get_vocab_size()
    assert got == vocab_size, f"tokenizer reached {got} tokens, wanted {vocab_size}"
    return tok


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


def tokenizer_config(model_max_length: int) -> dict:
    """tokenizer_config.json so `transformers.AutoTokenizer` loads the folder offline."""
    return {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS, "eos_token": EOS, "pad_token": PAD,
            "model_max_length": model_max_length, "clean_up_tokenization_spaces": False, "add_bos_token": False,
            "add_eos_token": False}


def special_tokens_map() -> dict:
    return {"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}
