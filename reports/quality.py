"""The report's quality section: drift per engine and precision from an `advisor verify --json` document.

One row per variant that ran: teacher-forced top-1 agreement, mean KL and perplexity on verify's shipped
text against the fp32 reference, greedy token agreement, and the variant's sample completion, with what
it was measured on (model, its weights, the text). Definitions: docs/metrics.md#quality-drift-on-a-fixed-text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class QualityFileError(ValueError):
    """The --quality file is missing or is not an `advisor verify --json` document."""


def load_verify(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise QualityFileError(f"quality file {path} not found; write it with `advisor verify --model M --json > {path}`")
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise QualityFileError(f"{path}: not valid JSON ({e}); write it with `advisor verify --json`") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("variants"), list):
        raise QualityFileError(f"{path} is not an `advisor verify --json` document (no 'variants' list)")
    return doc


def quality_context(doc: dict[str, Any]) -> dict[str, Any]:
    """What the template shows: rows per variant that ran, and what the figures were measured on."""
    from advisor.quality.text_drift import TEXT_SOURCE

    rows = []
    for v in doc["variants"]:
        if v.get("status") in ("unavailable", "error"):
            continue
        q = v.get("quality") or {}
        rows.append({"engine": v.get("adapter"), "format": v.get("format"), "precision": v.get("precision"),
                     "status": v.get("status"), "top1": q.get("top1_agreement"), "kl": q.get("kl"),
                     "ppl": q.get("perplexity"), "tokens_agree": v.get("token_agreement"),
                     "sample": v.get("sample")})
    return {"model": doc.get("model"), "weights": doc.get("weights") or "not recorded",
            "text": TEXT_SOURCE if doc.get("text_tokens") else None, "text_tokens": doc.get("text_tokens") or 0,
            "sample_prompt": doc.get("sample_prompt"), "rows": rows}
