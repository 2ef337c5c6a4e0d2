"""Logit agreement between a converted model and the fp32 reference.

Converters have silent failure modes (a wrong rotary permutation, the wrong
layer taken as the LM head, a dropped norm), so every conversion ends with
`check_logits`: the converted model's logits for a few prompts against
`oracle.logits`. fp32 must match tightly, fp16 loosely; quantized formats
only fail on gross mismatch (the argmax rarely agreeing) and otherwise report
their drift.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from adapters.formats import oracle
from fileform import FileForm

LogitsFn = Callable[[list[int]], np.ndarray]  # prompt ids -> logits [T, vocab]

# relative max-abs-diff tolerance (fraction of the reference's largest |logit|) per precision
TOLERANCE: dict[str, float] = {"fp32": 2e-3, "fp16": 3e-2}
# quantized variants fail only when they lose at least this fraction of what the reference knows beyond a
# uniform guess: KL(ref || model) >= GROSS_KL_FRACTION * KL(ref || uniform). Random tiny models have flat
# logits, so argmax agreement alone is a poor test of a lossy-but-sound quantization.
GROSS_KL_FRACTION = 0.5


class ConversionError(RuntimeError):
    """A conversion failed or produced a model that computes a different function."""


@dataclass(frozen=True)
class Divergence(FileForm):
    """How far one model's logits are from the reference's over the same positions."""

    max_abs_diff: float
    rel_max_abs_diff: float  # max_abs_diff / max |reference logit|
    kl: float  # mean KL(reference || model) per position, nats
    kl_uniform: float  # mean KL(reference || uniform): the scale a broken model's KL is compared to
    argmax_agreement: float  # fraction of positions with the same top token
    positions: int


def divergence(ref: np.ndarray, got: np.ndarray) -> Divergence:
    """Compare two [T, vocab] logit arrays."""
    if ref.shape != got.shape:
        raise ConversionError(f"logits shape {got.shape} differs from the reference's {ref.shape}")
    ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
    diff = float(np.max(np.abs(ref64 - got64)))
    scale = float(max(1.0, np.max(np.abs(ref64))))
    lp = _log_softmax(ref64)
    lq = _log_softmax(got64)
    kl = float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=-1)))
    kl_u = float(np.mean(np.sum(np.exp(lp) * (lp + np.log(ref.shape[-1])), axis=-1)))
    agree = float(np.mean(np.argmax(ref64, -1) == np.argmax(got64, -1)))
    return Divergence(diff, diff / scale, max(kl, 0.0), max(kl_u, 0.0), agree, int(ref.shape[0]))


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x - x.max(axis=-1, keepdims=True)
    return m - np.log(np.exp(m).sum(axis=-1, keepdims=True))


def check_prompts(vocab_size: int, n: int = 3, length: int = 12) -> list[list[int]]:
    """A few deterministic prompts of ordinary (non-special) token ids."""
    rng = np.random.default_rng(1234)
    lo = min(8, vocab_size // 2)
    return [rng.integers(lo, vocab_size, size=length + 5 * i).tolist() for i in range(n)]


def check_logits(model_path: Path, fmt: str, precision: str, fn: LogitsFn, vocab_size: int) -> Divergence:
    """Run the converted model on a few prompts; raise ConversionError on a mismatch, else return the drift."""
    refs, gots = [], []
    for ids in check_prompts(vocab_size):
        refs.append(oracle.logits(model_path, ids))
        gots.append(np.asarray(fn(ids), dtype=np.float32))
    div = divergence(np.concatenate(refs), np.concatenate(gots))
    tol = TOLERANCE.get(precision)
    if tol is not None and div.rel_max_abs_diff > tol:
        raise ConversionError(
            f"{fmt} {precision} conversion of {model_path} computes different logits: max abs diff "
            f"{div.max_abs_diff:.3g} ({div.rel_max_abs_diff:.2e} of the largest logit) > tolerance {tol:.0e}; "
            f"argmax agreement {div.argmax_agreement:.0%}. Reconvert with --force; if it persists the converter is broken")
    if tol is None and div.kl >= GROSS_KL_FRACTION * div.kl_uniform:
        raise ConversionError(
            f"{fmt} {precision} conversion of {model_path} is grossly wrong: KL to the fp32 reference {div.kl:.3g} "
            f">= {GROSS_KL_FRACTION} x KL(reference || uniform) = {div.kl_uniform:.3g}; "
            f"top token agrees at {div.argmax_agreement:.0%} of positions")
    return div
