"""SentencePiece-style tokenizers built with `tokenizers`: BPE with byte fallback (Llama-2's layout), Unigram,
and a WordLevel tokenizer.

`spm-bpe` is laid out exactly as the tokenizer.json that transformers writes
for a SentencePiece BPE model (Llama-2, Mistral, TinyLlama): specials
<unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF>, then the pieces in merge
order (learnt under SentencePiece's rules: no piece mixes letters, digits and
punctuation, digits stand alone, ▁ only leads); normalizer Prepend("▁") +
Replace(" ", "▁"), no pre-tokenizer, BOS
prepended, decoder Replace/ByteFallback/Fuse/Strip. Its merges are
*complete* (every split of a piece into two pieces is a merge, ranked by the
merged piece), as transformers' SentencePiece converter writes them, so the
merge-rank algorithm of `tokenizers` and SentencePiece's score algorithm
(which llama.cpp implements) give the same ids. The pieces themselves are
learnt by `tokenizers`' BPE trainer on whitespace-split words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from model_cache.tokenizer import TokenizerSpec, add_bos_template, training_lines

if TYPE_CHECKING:
    from tokenizers import Tokenizer

SPACE = "\u2581"  # ▁, SentencePiece's whitespace symbol
BYTE_TOKENS = tuple(f"<0x{b:02X}>" for b in range(256))
_ALPHABET = [chr(c) for c in range(0x21, 0x7F)] + [SPACE]
SPM_PIECE = r"▁?\p{L}+|\p{N}|▁?[^\p{L}\p{N}▁]+|▁"  # printable ASCII, space as ▁; the rest: byte fallback


def build(spec: TokenizerSpec, vocab_size: int, seed: int) -> Tokenizer:
    if spec.kind == "spm-bpe":
        return _spm_bpe(spec, vocab_size, seed)
    if spec.kind == "unigram":
        return _unigram(spec, vocab_size, seed)
    assert spec.kind == "wordlevel", spec.kind
    return _wordlevel(spec, vocab_size, seed)


def _spm_bpe(spec: TokenizerSpec, vocab_size: int, seed: int) -> Tokenizer:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    n_pieces = vocab_size - len(spec.specials) - len(BYTE_TOKENS)
    assert n_pieces > len(_ALPHABET), f"vocab {vocab_size} too small for a byte-fallback BPE"
    learner = Tokenizer(models.BPE())
    # SentencePiece's training rules (split_by_unicode_script, split_digits, whitespace only as a prefix): a
    # piece is letters, one digit, or punctuation, with at most a leading ▁, as in Llama-2's vocabulary
    learner.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True),
        pre_tokenizers.Split(Regex(SPM_PIECE), behavior="isolated", invert=False)])
    trainer = trainers.BpeTrainer(vocab_size=n_pieces, initial_alphabet=_ALPHABET, limit_alphabet=len(_ALPHABET),
                                  min_frequency=1, show_progress=False)
    learner.train_from_iterator(training_lines(vocab_size, seed), trainer=trainer)
    learnt = sorted(learner.get_vocab().items(), key=lambda kv: kv[1])  # alphabet first, then pieces in merge order
    vocab: dict[str, int] = {}
    for piece in (*spec.specials, *BYTE_TOKENS, *(p for p, _ in learnt)):
        vocab.setdefault(piece, len(vocab))
    assert len(vocab) == vocab_size, f"tokenizer reached {len(vocab)} tokens, wanted {vocab_size}"
    tok = Tokenizer(models.BPE(vocab=vocab, merges=complete_merges(vocab, first=len(spec.specials) + 256),
                               unk_token=spec.unk, byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)])
    tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.add_special_tokens(list(spec.specials))
    add_bos_template(tok, spec)
    return tok


def complete_merges(vocab: dict[str, int], first: int) -> list[tuple[str, str]]:
    """Every (left, right) with left, right and left+right pieces, ranked by the merged piece's id then the split.

    The id order is the SentencePiece score order (a lower id = a higher score), which makes merge ranks and
    scores pick the same pair at every step. Pieces below `first` (specials, byte tokens) are never merged into.
    """
    merges = []
    for piece, pid in sorted(vocab.items(), key=lambda kv: kv[1]):
        if pid < first or len(piece) < 2:
            continue
        splits = [(piece[:i], piece[i:]) for i in range(1, len(piece))]
        found = [(vocab[a], vocab[b], a, b) for a, b in splits if vocab.get(a, -1) >= first and vocab.get(b, -1) >= first]
        assert found, f"piece {piece!r} has no split into two pieces"
        merges += [(a, b) for _, _, a, b in sorted(found)]
    return merges


def _unigram(spec: TokenizerSpec, vocab_size: int, seed: int) -> Tokenizer:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement=SPACE, prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=list(spec.specials), unk_token=spec.unk,
                                      initial_alphabet=_ALPHABET, show_progress=False, max_piece_length=8)
    tok.train_from_iterator(training_lines(vocab_size, seed), trainer=trainer)
    got = tok.get_vocab_size()
    assert got == vocab_size, f"unigram tokenizer reached {got} tokens, wanted {vocab_size}"
    add_bos_template(tok, spec)
    return tok


def _wordlevel(spec: TokenizerSpec, vocab_size: int, seed: int) -> Tokenizer:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.WordLevel(unk_token=spec.unk))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=list(spec.specials), min_frequency=1,
                                        show_progress=False)
    tok.train_from_iterator(training_lines(vocab_size, seed), trainer=trainer)
    got = tok.get_vocab_size()
    assert got == vocab_size, f"word-level tokenizer reached {got} tokens, wanted {vocab_size}"
    return tok
