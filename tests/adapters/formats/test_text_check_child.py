"""The text check runs the engine's tokenizer in a child process: a native crash there is run again once, and a
second one is a ConversionError naming the signal, never the death of the conversion that asked.

The engine here is a stand-in `onnxruntime_genai` package put first on the child's path: it tokenizes with the
model's own tokenizer.json, and its `Model` kills its process with SIGSEGV while a counter file says so, as
the real one did in about 1 of 3 CI runs of the engines group (2026-11-26)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapters.formats import text_check
from adapters.formats.check import ConversionError
from tests.adapters.formats.models import tiny_model

FAKE_OG = '''
import os, signal
from pathlib import Path

from tokenizers import Tokenizer as _Tok

COUNTER = Path(os.environ["FAKE_OG_CRASHES"])


class Model:
    def __init__(self, folder):
        left = int(COUNTER.read_text())
        if left > 0:
            COUNTER.write_text(str(left - 1))
            os.kill(os.getpid(), signal.SIGSEGV)
        self.folder = folder


class Tokenizer:
    def __init__(self, model):
        self.tok = _Tok.from_file(str(Path(model.folder) / "tokenizer.json"))

    def update_options(self, **kw):
        pass

    def encode(self, text):
        return self.tok.encode(text).ids

    def decode(self, ids):
        return self.tok.decode([int(i) for i in ids], skip_special_tokens=True)
'''


@pytest.fixture()
def crashing_og(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = tmp_path / "fake" / "onnxruntime_genai"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_OG)
    counter = tmp_path / "crashes_left"
    monkeypatch.setenv("FAKE_OG_CRASHES", str(counter))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pkg.parent), os.environ.get("PYTHONPATH", "")]))
    return counter


def test_one_crash_is_run_again_and_counted(crashing_og: Path) -> None:
    crashing_og.write_text("1")
    model = tiny_model()
    result = text_check.check(model, "onnx", model)  # the stand-in reads tokenizer.json from the folder given
    assert result.crashes == 1 and result.ok, result
    assert crashing_og.read_text() == "0"


def test_two_crashes_are_a_conversion_error_naming_the_signal(crashing_og: Path) -> None:
    crashing_og.write_text("2")
    model = tiny_model()
    with pytest.raises(ConversionError, match=r"onnx: the engine's own tokenizer crashed twice \(SIGSEGV, SIGSEGV\)"):
        text_check.check(model, "onnx", model)


def test_without_a_crash_the_childs_result_comes_back_whole(crashing_og: Path) -> None:
    crashing_og.write_text("0")
    model = tiny_model()
    result = text_check.check(model, "onnx", model)
    assert result.crashes == 0 and result.ok and result.texts == len(text_check.texts_for(model))
