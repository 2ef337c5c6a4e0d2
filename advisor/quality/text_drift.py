"""Quality drift that means something on a trained model: teacher-forced agreement, KL and perplexity on a text.

Greedy agreement (`advisor.quality.verify`) counts tokens until the first divergence decides the rest; here every
position counts once. The fixed text (`advisor/data/quality_text.txt`, public domain, credited in the file)
is tokenized by the model's own tokenizer and cut to `max_tokens`; the fp32 reference (own_engine's plain
forward, `adapters.formats.oracle`) and the variant each score every position of that one window, and:

- top-1 agreement: share of positions where both put the same token first (llama.cpp's
  `perplexity --kl-divergence` "Same top p");
- mean KL(reference || variant) of the next-token distributions, nats (llama.cpp's "Mean KLD");
- perplexity: exp of the mean negative log-likelihood of the text's actual next token, per variant and for
  the reference (llama.cpp's PPL; it scores only each chunk's second half, this scores every position of
  one window: the figures compare between variants here, not with llama.cpp's published PPLs).

Definitions with their sources: docs/metrics.md#quality-drift-on-a-fixed-text. On random weights these
figures are computed alike but mean little (a flat distribution agrees by chance): `advisor verify` says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np

from fileform import FileForm

TEXT_NAME = "quality_text.txt"
TEXT_SOURCE = "Lewis Carroll, Alice's Adventures in Wonderland (1865), ch. I (public domain)"
DEFAULT_MAX_TOKENS = 384


def shipped_text() -> str:
    """The text without its credit header (leading '#' lines up to the first blank line)."""
    raw = files("advisor").joinpath("data", TEXT_NAME).read_text(encoding="utf-8")
    lines = raw.splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "\n".join(lines).strip() + "\n"


def text_ids(model_path: Path, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[int] | None:
    """The shipped text as the model's token ids (its own tokenizer, BOS as it adds it), cut to `max_tokens` and
    the model's context; None when the model has no tokenizer (it runs on ids only)."""
    from model_cache.tokenizer import load_tokenizer

    tok = load_tokenizer(model_path)
    if tok is None:
        return None
    cfg = json.loads((Path(model_path) / "config.json").read_text())
    cap = min(max_tokens, int(cfg.get("max_position_embeddings") or max_tokens))
    return list(tok.encode(shipped_text()).ids)[:cap]


@dataclass(frozen=True)
class TextQuality(FileForm):
    """One variant against the fp32 reference over the same token ids (every position scored once)."""

    positions: int  # predictions scored (tokens - 1)
    top1_agreement: float
    kl: float  # mean KL(reference || variant), nats
    kl_p99: float  # 99th percentile of the per-position KL
    perplexity: float  # the variant's, on the text
    reference_perplexity: float
    text: str = TEXT_SOURCE

    @property
    def drift(self) -> float:
        """What the recommender's --max-quality-drift constrains: 1 - top-1 agreement."""
        return 1.0 - self.top1_agreement

    def to_dict(self) -> dict[str, object]:
        return {**FileForm.to_dict(self), "drift": self.drift}


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x - x.max(axis=-1, keepdims=True)
    return m - np.log(np.exp(m).sum(axis=-1, keepdims=True))


def compare(ids: list[int], ref_logits: np.ndarray, got_logits: np.ndarray) -> TextQuality:
    """Logits [T, vocab] of reference and variant for the same `ids` (T = len(ids)); position t predicts ids[t+1]."""
    if ref_logits.shape != got_logits.shape or ref_logits.shape[0] != len(ids):
        raise ValueError(f"logits {got_logits.shape} vs reference {ref_logits.shape} for {len(ids)} tokens")
    if len(ids) < 2:
        raise ValueError("the text is shorter than two tokens: nothing to predict")
    lp = _log_softmax(ref_logits[:-1].astype(np.float64))
    lq = _log_softmax(got_logits[:-1].astype(np.float64))
    nxt = np.asarray(ids[1:])
    kl = np.maximum(np.sum(np.exp(lp) * (lp - lq), axis=-1), 0.0)
    rows = np.arange(len(nxt))
    return TextQuality(
        positions=len(nxt),
        top1_agreement=float(np.mean(lp.argmax(-1) == lq.argmax(-1))),
        kl=float(kl.mean()), kl_p99=float(np.percentile(kl, 99)),
        perplexity=float(np.exp(-lq[rows, nxt].mean())), reference_perplexity=float(np.exp(-lp[rows, nxt].mean())))
