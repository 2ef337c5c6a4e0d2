"""advisor.quality.text_drift: teacher-forced top-1 agreement, KL and perplexity over the shipped text, exactly as defined."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from advisor.quality import text_drift as tq
from advisor_cli.verify import verify_command
from tests.adapters.formats.models import tiny_model


def test_shipped_text_is_credited_and_stripped() -> None:
    from importlib.resources import files

    raw = files("advisor").joinpath("data", tq.TEXT_NAME).read_text(encoding="utf-8")
    assert "Public domain" in raw and "Lewis Carroll" in raw
    text = tq.shipped_text()
    assert text.startswith("Alice was beginning") and "#" not in text and len(text) > 2000


def test_identical_logits_agree_fully() -> None:
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, size=20).tolist()
    logits = rng.normal(size=(20, 50)).astype(np.float32)
    q = tq.compare(ids, logits, logits)
    assert q.positions == 19 and q.top1_agreement == 1.0 and q.kl == 0.0 and q.drift == 0.0
    assert q.perplexity == pytest.approx(q.reference_perplexity)


def test_figures_match_their_definitions() -> None:
    ids = [0, 1, 0]
    ref = np.log(np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]]))
    got = np.log(np.array([[0.4, 0.6], [0.2, 0.8], [0.5, 0.5]]))
    q = tq.compare(ids, ref, got)
    kl0 = 0.7 * np.log(0.7 / 0.4) + 0.3 * np.log(0.3 / 0.6)
    assert q.kl == pytest.approx(kl0 / 2)  # position 1 has KL 0
    assert q.top1_agreement == 0.5  # position 0: ref says token 0, variant token 1
    assert q.perplexity == pytest.approx(np.exp(-(np.log(0.6) + np.log(0.2)) / 2))  # next tokens 1 then 0
    assert q.reference_perplexity == pytest.approx(np.exp(-(np.log(0.3) + np.log(0.2)) / 2))


def test_a_noisier_variant_drifts_more() -> None:
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 100, size=200).tolist()
    ref = rng.normal(scale=3, size=(200, 100))
    small, big = (tq.compare(ids, ref, ref + rng.normal(scale=s, size=ref.shape)) for s in (0.05, 1.0))
    assert small.kl < big.kl and small.top1_agreement > big.top1_agreement


def test_verify_scores_the_text_and_says_the_weights_are_random() -> None:
    res = CliRunner().invoke(verify_command, ["--model", str(tiny_model()), "--tokens", "4", "--prompts", "1",
                                              "--engine", "own", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["weights"].startswith("random") and doc["text_tokens"] > 100
    (v,) = doc["variants"]
    assert v["quality"]["top1_agreement"] == 1.0 and v["quality"]["kl"] == 0.0 and v["quality"]["perplexity"] > 1
    assert isinstance(v["sample"], str) and v["sample"]
    assert doc["quality_drift"]["own/fp32"]["top1_agreement"] == 1.0
