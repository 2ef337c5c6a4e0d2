"""The shipped text corpus that embedding scenarios draw their inputs from, cut into chunks of words.

`corpus/kjv-sample.tsv.gz` holds four books of the King James Version (public domain; source and
extraction in `corpus/README.md`), one verse a line: `Book chapter:verse<TAB>text`. A chunk is
`chunk_words` consecutive words of one book (verses joined; the last, shorter piece of a book is
dropped), so a request's inputs are real prose of a known length in words. Tokens are not counted
here: the engine's own tokenizer counts them, and the metrics use its count.
"""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

from scenarios.errors import ScenarioError

CORPUS_FILE = Path(__file__).resolve().parent / "corpus" / "kjv-sample.tsv.gz"


@cache
def verses() -> tuple[tuple[str, str], ...]:
    """Every (reference, text) line of the corpus, in order."""
    with gzip.open(CORPUS_FILE, "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t", 1) for line in f if line.strip()]
    assert all(len(r) == 2 for r in rows), "corpus lines are `reference<TAB>text`"
    return tuple((r[0], r[1]) for r in rows)


@cache
def chunks(chunk_words: int) -> tuple[str, ...]:
    """The corpus as non-overlapping chunks of exactly `chunk_words` words, book by book."""
    if chunk_words < 1:
        raise ScenarioError(f"chunk_words must be >= 1, got {chunk_words}")
    books: dict[str, list[str]] = {}
    for ref, text in verses():
        books.setdefault(ref.rsplit(" ", 1)[0], []).extend(text.split())
    out = [" ".join(words[i:i + chunk_words]) for words in books.values()
           for i in range(0, len(words) - chunk_words + 1, chunk_words)]
    if not out:
        longest = max(len(w) for w in books.values())
        raise ScenarioError(f"chunk_words={chunk_words} is longer than every book of the corpus "
                            f"(longest: {longest} words); give a smaller chunk_words")
    return tuple(out)
