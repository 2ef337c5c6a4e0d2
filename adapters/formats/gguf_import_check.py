"""Proof that an imported folder is the GGUF it came from: llama.cpp on the original file is the reference.

1. Text: the folder's tokenizer.json (built by `gguf_tokenizer`) must give llama.cpp's ids on the original
   file, and decode them alike, on `text_check`'s mixed texts (ASCII, accents, CJK, emoji, code,
   digits, whitespace runs, the special tokens). Any difference fails the import.
2. Greedy ids: own_engine's fp32 reference (`oracle.greedy`) on the folder and llama.cpp on the original
   file, from the same prompts (plain English, encoded by the tokenizer just checked), for `n_tokens` each;
   where they first diverge is reported, not failed: llama.cpp multiplies quantized weights with
   activations it rounds to 8 bits (Q8_0/Q8_1 blocks) where own_engine uses fp32 activations on the
   dequantized weights, so two near-tied tokens may swap. What fails is a different function:
3. Teacher-forced top-1 agreement and KL of the next-token distributions over prompt + own_engine's
   continuation: an import with a wrong permutation or a misplaced tensor agrees at chance level, an exact
   one at nearly every position (SmolLM2 Q4_1: 94-96%). Below `MIN_TOP1` the import is refused. The exact
   check of the weights is `advisor models convert NAME --to gguf` (fp32): llama.cpp then computes in fp32 and
   must match own_engine within 2e-3 of the largest logit (SmolLM2: 3e-6, top-1 100%).

Needs llama-cpp-python (`.[llamacpp]`); without it the import says it was not checked, and why.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from adapters.formats.check import ConversionError, divergence

PROMPTS = ("The capital of France is", "Once upon a time, in a small village by the sea,",
           "def fibonacci(n):\n    ")
# SmolLM2 Q4_1: 94-96% (llama.cpp's 8-bit activations move near-ties); a wrong permutation or tensor: near 0
MIN_TOP1 = 0.8


def _llama_greedy(fn: Any, ids: list[int], n: int) -> list[int]:
    seq = list(ids)
    for _ in range(n):
        seq.append(int(np.argmax(fn(seq)[-1])))
    return seq[len(ids):]


def first_divergence(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


def check(folder: Path, gguf_file: Path, *, n_tokens: int = 16, log: Any = None) -> dict[str, Any]:
    """Run the three checks; raise ConversionError on a tokenizer or function mismatch, else return the figures."""
    import adapters
    from adapters.formats import gguf as g
    from adapters.formats import oracle, text_check
    from model_cache.tokenizer import load_tokenizer

    say = log or (lambda line: None)
    why = adapters.why_unavailable("llama_cpp")
    if why:
        say(f"not checked against llama.cpp: {why}")
        return {"checked": False, "why": why}
    with tempfile.TemporaryDirectory(prefix="advisor-gguf-check-") as d:
        (Path(d) / g.FILENAME).symlink_to(Path(gguf_file).resolve())
        text = text_check.check(folder, "gguf", Path(d))
        if not text.ok:
            raise ConversionError(f"the imported tokenizer tokenizes text differently from llama.cpp on the original "
                                  f"file ({text.ids_agree}/{text.texts} texts give the same ids); first: "
                                  f"{text.first_mismatch}")
        say(f"tokenizer: {text.texts}/{text.texts} mixed texts give llama.cpp's ids and decode alike")
        tok = load_tokenizer(folder, required=True)
        fn = g.logits_fn(Path(d))
        try:
            runs, refs, gots = [], [], []
            for prompt in PROMPTS:
                ids = list(tok.encode(prompt).ids)
                own = oracle.greedy(folder, ids, n_tokens)
                ref = _llama_greedy(fn, ids, n_tokens)
                runs.append({"prompt": prompt, "own_engine": own, "llama_cpp": ref,
                             "first_divergence": first_divergence(own, ref)})
                seq = ids + own
                refs.append(np.asarray(fn(seq))[len(ids) - 1:-1])
                gots.append(oracle.logits(folder, seq)[len(ids) - 1:-1])
        finally:
            getattr(fn, "close", lambda: None)()
    div = divergence(np.concatenate(refs), np.concatenate(gots))
    same = sum(r["first_divergence"] is None for r in runs)
    firsts = [r["first_divergence"] for r in runs if r["first_divergence"] is not None]
    say(f"greedy ids vs llama.cpp on the original file: {same}/{len(runs)} prompts equal for {n_tokens} tokens"
        + (f", first divergence at token {min(firsts)} (llama.cpp rounds activations to 8 bits against quantized "
           "weights, own_engine keeps fp32: near-tied tokens swap; `advisor models convert NAME --to gguf` checks "
           "the folder against llama.cpp at fp32)" if firsts else ""))
    say(f"teacher-forced vs llama.cpp: top-1 agreement {div.argmax_agreement:.1%}, mean KL {div.kl:.2g} nats "
        f"over {div.positions} positions")
    if div.argmax_agreement < MIN_TOP1:
        raise ConversionError(f"the imported weights compute a different function from llama.cpp on the original file: "
                              f"teacher-forced top-1 agreement {div.argmax_agreement:.0%} < {MIN_TOP1:.0%} "
                              f"(KL {div.kl:.3g}); import is broken for this file")
    return {"checked": True, "text": text.to_dict(), "greedy": runs, "n_tokens": n_tokens,
            "teacher_forced": {"top1_agreement": div.argmax_agreement, "kl": div.kl, "positions": div.positions,
                               "max_abs_diff": div.max_abs_diff},
            "reference": "llama.cpp (llama-cpp-python) on the original GGUF, f32 KV cache, flash attention off"}
