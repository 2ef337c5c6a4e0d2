"""Docs and docstrings are reference, not a journal: they say what is and why, in the present tense.

The project's history (what changed when, which issue asked for it, figures of past runs) lives in
benchmarks/history/, and the current figures in benchmarks/RESULTS.md; neither is checked here. Checked:
docs/*.md, README.md, and the comments and docstrings of the packages below (own_engine/ is left to its own
rooms' test). Error messages and other string literals are code, not prose, and are not read.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("advisor", "advisor_cli", "adapters", "reports", "scenarios")

# Each marker is a sign of a journal entry in prose.
MARKERS = {
    "an issue number": re.compile(r"\bissues? #?\d+", re.I),
    "a bare issue reference": re.compile(r"(?<![\w/&#])#\d{2,}\b"),
    "a date": re.compile(r"\b20\d\d-[01]\d(-[0-3]\d)?\b"),
    "a review's finding": re.compile(r"\b(a|after a|in a) review('s)?\b", re.I),
    "before/after narrative": re.compile(r"\bbefore/after\b|\b(before|until|since) (this|the) (change|rule|fix)\b"
                                         r"|^Before,|[.:;] Before,", re.I),
    "'used to' narrative": re.compile(r"\bused to (be|run|import|report|build|count|take|give|say)\b", re.I),
    "'now' narrative": re.compile(r"\b(has|have|gets?) now\b|\bnow (has|have|gets|refuses|goes|moves|becomes)\b", re.I),
    "a session's own words": re.compile(r"\bthe lead'?s?\b|\bthis stop\b|\btoday'?s engine\b", re.I),
}

# A date that is data, not journal: the day a source was read (a price, a paper, a project's code) is written
# "read DATE" or "as known on DATE", beside the source it dates, and a quoted timestamp is a format's example.
# Text in `code` (paths of saved measurements, run ids, file names) and in fenced blocks is not prose and is
# not read for any marker.
SOURCE_DATE = re.compile(r"\b(read|as known on|retrieved)\s+20\d\d-[01]\d(-[0-3]\d)?\b", re.I)
CODE_SPAN = re.compile(r"`[^`\n]*`")
QUOTED = re.compile(r"""(['"])[^'"\n]*\d[^'"\n]*\1""")  # a quoted example: '2023-11-16 18:15:00'


def prose(text: str, what: str) -> str:
    """The text a marker reads: code spans out; for dates also a source's date and quoted examples."""
    text = CODE_SPAN.sub("``", text)
    return QUOTED.sub('""', SOURCE_DATE.sub("", text)) if what == "a date" else text


def markdown_lines(path: Path):
    fenced = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def python_prose(path: Path):
    """(line, text) of every comment and docstring in a Python file."""
    source = path.read_text()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                for i, line in enumerate(body[0].value.value.splitlines()):
                    yield body[0].lineno + i, line


def journal_hits(lines, shown: str) -> list[str]:
    hits = []
    for n, text in lines:
        for what, marker in MARKERS.items():
            if m := marker.search(prose(text, what)):
                hits.append(f"{shown}:{n}: {what} ({m.group(0)!r}): {text.strip()[:120]}")
    return hits


def test_docs_are_reference_not_journal():
    docs = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
    hits = [h for p in docs for h in journal_hits(markdown_lines(p), str(p.relative_to(REPO)))]
    assert hits == [], "move history to benchmarks/history/ and say what is:\n" + "\n".join(hits)


def test_docstrings_and_comments_are_reference_not_journal():
    hits = []
    for package in PACKAGES:
        for p in sorted((REPO / package).rglob("*.py")):
            hits += journal_hits(python_prose(p), str(p.relative_to(REPO)))
    assert hits == [], "move history to benchmarks/history/ and say what is:\n" + "\n".join(hits)


def test_the_markers_catch_a_journal_and_pass_reference():
    journal = ["Until 2026-11-27 it also counted late requests.", "Before issue 40 SATURATED beat INVALID.",
               "(see #12)", "\"fixed in issue 40\"", "A review found that before any GPU ran it.",
               "Before, each token was a call.", "it used to import the probes", "Each backend now has one decode route.", "the lead's run"]
    reference = ["prices read 2026-11-28 from the vendor's page", "the runs in `shared/gpu-runs/h200-2026-11-26`",
                 "like '2023-11-16 18:17:03.979'", "the server used to decode ids",
                 "a signal while it was being saved: stop now", "cuDNN's plan cache (sglang#4650)"]
    assert all(journal_hits([(1, t)], "x") for t in journal), [t for t in journal if not journal_hits([(1, t)], "x")]
    assert not any(journal_hits([(1, t)], "x") for t in reference), [journal_hits([(1, t)], "x") for t in reference]
