"""Fixtures of the conversion tests: a private copy of the tiny model, and a stand-in for the engine writers."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import adapters.formats as conv
from adapters.formats import oracle as ref_mod
from adapters.formats import text_check
from tests.adapters.formats.models import tiny_model


@pytest.fixture()
def model_copy(tmp_path: Path) -> Path:
    """A private copy of the tiny model (tests below modify or convert it)."""
    dst = tmp_path / "tiny"
    shutil.copytree(tiny_model(), dst, ignore=shutil.ignore_patterns("converted"))
    return dst


@pytest.fixture()
def fake_format(monkeypatch: pytest.MonkeyPatch):
    """Stand in for an engine writer: counts writes; its 'engine' computes the reference logits (+ offset) and
    tokenizes with the original tokenizer (+ `shift` added to every id)."""
    calls = {"writes": 0, "offset": 0.0, "shift": 0}

    def write(model_path: Path, fmt: str, precision: str, tmp: Path) -> None:
        calls["writes"] += 1
        (tmp / "weights.bin").write_bytes(b"x")

    def logits_fn(fmt: str, out_dir: Path):
        src = out_dir.parent.parent  # <model>/converted/<tmp>
        return lambda ids: ref_mod.logits(src, ids) + calls["offset"] * np.arange(2048, dtype=np.float32) / 2048

    def text(model_path: Path, fmt: str, out_dir: Path):
        encode, decode = text_check.original(model_path, skip_special=False)
        return text_check.compare(model_path, lambda t: [i + calls["shift"] for i in encode(t)], decode)

    monkeypatch.setattr(conv, "_write", write)
    monkeypatch.setattr(conv, "logits_fn", logits_fn)
    monkeypatch.setattr(conv.text_check, "check", text)
    return calls
