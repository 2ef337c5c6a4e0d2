"""Text check: a converted model's own tokenizer must give the original tokenizer's ids, and decode them alike.

Logit checks feed token ids, so they cannot see a converter that writes a
different vocabulary; this check encodes mixed text (ASCII, accents, CJK,
emoji, code, whitespace runs, the tokenizer's own special tokens) with the
original `tokenizers` tokenizer and with the format's tokenizer as its
engine runs it (llama.cpp's vocab in the GGUF, onnxruntime-genai's tokenizer,
the openvino-tokenizers IRs), and compares ids and decoded text. Every
conversion runs it (`adapters.formats.convert`) and `advisor verify` reports it
per variant.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fileform import FileForm
from model_cache.tokenizer import load_tokenizer

TEXTS = (
    "Once upon a time, there was a little cat.",
    "Héllo café 日本 🙂",
    "Naïve résumé: Ærøskøbing, São Paulo, Zürich, Kraków, İstanbul.",
    "日本語のテキストと中文和한국어 mixed with English.",
    "Emoji: 🙂🚀👍🏽 ❤️ 🇫🇷 and a family 👨‍👩‍👧.",
    "def f(x):\n    return x ** 2  # square\n\n\tif x >= 10:\n\t\tpass",
    "spaces   between  words\t\ttabs\n\n\nnewlines   and trailing   ",
    "   leading spaces, numbers 12345 67 3.14159 1,000,000 and 2026-11-22",
    "{\"key\": [1, 2, 3], 'x': None} <html><b>bold</b></html> a+b=c; x->y && z||w",
)

Encode = Callable[[str], list[int]]
Decode = Callable[[list[int]], str]


@dataclass(frozen=True)
class TextCheck(FileForm):
    texts: int
    ids_agree: int  # texts whose ids equal the original's
    decode_agree: int  # texts whose ids the format decodes to the original's decoding of them
    first_mismatch: str | None = None  # what differed first, for the error and the report
    caveat: str | None = None  # a decode difference that is a convention, not a different tokenizer (see compare)
    crashes: int = 0  # runs of the check whose process the engine's tokenizer crashed before one finished (check)

    @property
    def ok(self) -> bool:
        return self.ids_agree == self.decode_agree == self.texts

    @property
    def agreement(self) -> float:
        return min(self.ids_agree, self.decode_agree) / self.texts if self.texts else 1.0

    def to_dict(self) -> dict[str, object]:
        return {**FileForm.to_dict(self), "ok": self.ok}


def special_tokens(model_path: Path) -> list[str]:
    """The tokenizer's special added tokens, as text."""
    tj = json.loads((Path(model_path) / "tokenizer.json").read_text(encoding="utf-8"))
    return [t["content"] for t in tj.get("added_tokens", []) if t.get("special")]


def texts_for(model_path: Path) -> list[str]:
    """The fixed mixed texts plus one that embeds the tokenizer's own special tokens."""
    specials = special_tokens(model_path)
    out = list(TEXTS)
    if specials:
        out.append(f"{specials[0]}start of text{specials[-1]} middle {' x '.join(specials)} end")
    return out


def original(model_path: Path, skip_special: bool) -> tuple[Encode, Decode]:
    """encode/decode of the model folder's tokenizer.json with `tokenizers` (specials added and parsed)."""
    tok = load_tokenizer(model_path, required=True)
    return (lambda text: list(tok.encode(text).ids),
            lambda ids: tok.decode(ids, skip_special_tokens=skip_special))


def compare(model_path: Path, encode: Encode, decode: Decode, *, skip_special: bool = False) -> TextCheck:
    """Run both tokenizers over `texts_for(model_path)`.

    One difference is recorded as a caveat, not a mismatch: when the format can only decode *without* special
    tokens (`skip_special`), the spaces around the removed specials (the text that embeds them) may differ,
    which is a detokenizer's convention (the ids must still agree).
    """
    ref_encode, ref_decode = original(model_path, skip_special)
    texts = texts_for(model_path)
    special_text = texts[-1] if special_tokens(model_path) else None
    ids_ok = dec_ok = 0
    first: str | None = None
    caveat: str | None = None
    for text in texts:
        want = ref_encode(text)
        got = encode(text)
        if got == want:
            ids_ok += 1
        elif first is None:
            first = f"{text!r}: original ids {_short(want)}, converted {_short(got)}"
        want_text, got_text = ref_decode(want), decode(want)
        if got_text == want_text:
            dec_ok += 1
        elif skip_special and text == special_text and got_text.split() == want_text.split():
            dec_ok += 1
            caveat = (f"decoding without special tokens spaces the text around them differently: original "
                      f"{want_text!r}, converted {got_text!r}")
        elif first is None:
            first = f"decoding the ids of {text!r}: original {want_text!r}, converted {got_text!r}"
    return TextCheck(len(texts), ids_ok, dec_ok, first, caveat)


def _short(ids: list[int]) -> str:
    return f"{ids[:12]}{'...' if len(ids) > 12 else ''} ({len(ids)} tokens)"


CHILD_TIMEOUT_S = 600.0
_RESULT = "text_check result: "  # the child's last stdout line starts with this


def check(model_path: Path, fmt: str, out_dir: Path) -> TextCheck:
    """The text check of `fmt`'s tokenizer in the converted folder `out_dir` (the format module's `tokenizer_fn`),
    in a child process: the engines' tokenizers are native code, and onnxruntime-genai's can crash the whole
    process (SIGSEGV in `og.Tokenizer(og.Model(dir))`, seen in about 1 of 3 runs of the engines group on a
    2-core CI machine), which would kill the conversion or `advisor verify` that runs it. A crash is run again once (`crashes`
    says so); a second one is a ConversionError naming the signal."""
    from adapters.formats.check import ConversionError
    from adapters.formats.tokenizer_family import detect

    root = str(Path(__file__).resolve().parents[2])
    code = (f"import sys; sys.path.insert(0, {root!r}); from adapters.formats.text_check import _child; "
            "_child(*sys.argv[1:])")
    crashed: list[str] = []
    while True:
        try:
            proc = subprocess.run([sys.executable, "-c", code, str(model_path), fmt, str(out_dir)],
                                  capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ConversionError(f"{fmt}: the engine's own tokenizer did not finish the text check in "
                                  f"{CHILD_TIMEOUT_S:.0f} s") from None
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(_RESULT)]
        if proc.returncode == 0 and lines:
            out = json.loads(lines[-1][len(_RESULT):])
            if "error" in out:
                raise ConversionError(out["error"])
            return TextCheck.from_dict({**out, "crashes": len(crashed)})  # `ok` follows from the counts: not read
        how = (signal.Signals(-proc.returncode).name if proc.returncode < 0 and -proc.returncode in
               signal.valid_signals() else f"exit {proc.returncode}")
        crashed.append(how)
        if len(crashed) == 2:
            tail = proc.stderr.strip().splitlines()[-1:] or [""]
            raise ConversionError(f"{fmt}: the engine's own tokenizer crashed twice ({', '.join(crashed)}) checking "
                                  f"this {detect(model_path).describe()} tokenizer; it ran in a child process, so "
                                  f"nothing else was lost ({tail[0][:200]}); run it again, use another format, or "
                                  "send token ids")


def _child(model_path: str, fmt: str, out_dir: str) -> None:
    """The text check in this (child) process; one result line on stdout."""
    from adapters.formats.check import ConversionError

    try:
        out: dict[str, object] = check_here(Path(model_path), fmt, Path(out_dir)).to_dict()
    except ConversionError as e:
        out = {"error": str(e)}
    sys.stdout.write(_RESULT + json.dumps(out) + "\n")
    sys.stdout.flush()


def check_here(model_path: Path, fmt: str, out_dir: Path) -> TextCheck:
    """`check` in this process."""
    from adapters.formats.check import ConversionError
    from adapters.formats.registry import format_module
    from adapters.formats.tokenizer_family import detect

    mod: Any = format_module(fmt)
    encode, decode, skip_special = mod.tokenizer_fn(out_dir)
    try:
        return compare(model_path, encode, decode, skip_special=skip_special)
    except ConversionError:
        raise
    except Exception as e:  # the engine's tokenizer itself failed on this tokenizer (each raises its own types)
        raise ConversionError(f"{fmt}: the engine's own tokenizer fails on this {detect(model_path).describe()} "
                              f"tokenizer of a {_model_type(model_path)} model ({type(e).__name__}: {str(e)[:200]}); "
                              "use a format whose tokenizer agrees (`advisor verify` shows each), or send token "
                              "ids") from e
    finally:
        getattr(encode, "close", lambda: None)()


def _model_type(model_path: Path) -> str:
    return str(json.loads((Path(model_path) / "config.json").read_text()).get("model_type"))
