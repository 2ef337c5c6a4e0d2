"""`advisor verify`: prove every engine and format variant computes the same function before comparing speed.

For one model (default: the built-in tiny model), each available variant
(engine x format x precision) serves the same prompts greedily through its
real adapter; its output ids are compared with own_engine's fp32 reference
greedy ids (token agreement, first divergence), and its logits, computed by
the same engine on the reference sequence (teacher-forced), are compared
over the first steps (max abs difference, KL). fp32 variants, and fp16 ones
whose engine computes in fp32 (OpenVINO), must agree token for token; the
others report "quality drift", which the recommender reads from
`VariantResult.to_dict()`. Which variants exist, and the options each is
built with, are what the adapters declare (`Capabilities.verify`, `Adapter.verify_options`). The text check (`adapters.formats.text_check`)
runs each variant's own tokenizer over mixed text against the original
`tokenizers` one: any variant whose ids or decoded text differ is a MISMATCH,
whatever its precision (a benchmark sending it text would measure other
prompts).

On a model with a tokenizer each variant is also scored over a fixed shipped
text (`advisor.quality.text_drift`): teacher-forced top-1 agreement, mean KL and
perplexity against the fp32 reference, the figure the recommender's
--max-quality-drift reads (1 - top-1 agreement), and one readable greedy
completion of `SAMPLE_PROMPT` per variant for the report.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

import adapters
from adapters.base import REFERENCE_FORMAT, RequestSpec, VerifyCase
from adapters.formats import ConversionError, convert, logits_fn, oracle, text_check
from adapters.formats.check import divergence
from advisor.quality import text_drift as tq
from fileform import FileForm

Status = Literal["agree", "quality drift", "MISMATCH", "unavailable", "error"]
SAMPLE_PROMPT = "Once upon a time, there was a little cat who"
SAMPLE_TOKENS = 24


@dataclass(frozen=True)
class Variant:
    adapter: str
    format: str  # adapters.formats format name, or REFERENCE_FORMAT: the folder as it is (own_engine's reference)
    precision: str
    strict: bool = False  # must agree token for token: fp32, and fp16 where the engine computes in fp32

    @property
    def case(self) -> VerifyCase:
        return VerifyCase(self.format, self.precision, self.strict)

    @property
    def is_reference(self) -> bool:
        """Served from the model folder as it is by the engine the fp32 reference is (no conversion)."""
        return self.format == REFERENCE_FORMAT


def all_variants() -> tuple[Variant, ...]:
    """Every variant the registered adapters declare (`Capabilities.verify`), in registry order."""
    return tuple(Variant(name, c.format, c.precision, c.strict) for name in adapters.REGISTRY
                 for c in adapters.adapter_class(name).capabilities.verify)


@dataclass(frozen=True)
class VariantResult(FileForm):
    """One variant's agreement with own_engine fp32 (what the recommender reads as quality drift)."""

    adapter: str
    engine: str
    format: str
    precision: str
    status: Status
    tokens_compared: int = 0
    token_agreement: float | None = None  # fraction of generated tokens equal to the reference's
    first_divergence: int | None = None  # earliest output position (over all prompts) that differs; None: none
    logit_steps: int = 0
    max_abs_diff: float | None = None
    kl: float | None = None  # mean KL(reference || variant) per step, nats
    version: str | None = None
    detail: str = ""
    text_agreement: float | None = None  # fraction of mixed texts its own tokenizer encodes and decodes as the original
    text_detail: str = ""  # the first text that differed
    quality: dict[str, object] | None = None  # advisor.quality.text_drift.TextQuality.to_dict() over the shipped text
    sample: str | None = None  # greedy completion of SAMPLE_PROMPT through the variant's own serving path


@dataclass(frozen=True)
class VerifyReport:
    model: str
    n_tokens: int
    prompts: tuple[tuple[int, ...], ...]
    results: tuple[VariantResult, ...]
    weights: str = ""  # "trained: ..." or "random: ..." (drift on random weights means little)
    text_tokens: int = 0  # tokens of the shipped text each variant was scored on (0: no tokenizer)

    @property
    def ok(self) -> bool:
        """False when a variant that must agree (fp32, fp16 computed in fp32) disagrees, or an fp32 one failed."""
        return not any(r.status == "MISMATCH" or (r.status == "error" and r.precision == "fp32") for r in self.results)

    def quality_drift(self) -> dict[str, dict[str, object]]:
        """Per "engine/precision": what `advisor recommend --quality FILE` reads (top1_agreement first)."""
        out: dict[str, dict[str, object]] = {}
        for r in self.results:
            if r.status in ("unavailable", "error"):
                continue
            q = r.quality or {}
            out[f"{r.adapter}/{r.precision}"] = {
                "token_agreement": r.token_agreement, "top1_agreement": q.get("top1_agreement"), "kl": q.get("kl"),
                "perplexity": q.get("perplexity"), "text": q.get("text"), "weights": self.weights}
        return out

    def to_dict(self) -> dict[str, object]:  # hand-written: a computed view (from properties, never read back)
        return {"model": self.model, "weights": self.weights, "n_tokens": self.n_tokens,
                "prompts": [list(p) for p in self.prompts], "text_tokens": self.text_tokens,
                "sample_prompt": SAMPLE_PROMPT, "ok": self.ok, "variants": [r.to_dict() for r in self.results],
                "quality_drift": self.quality_drift()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)


def make_prompts(vocab_size: int, k: int, length: int = 16, seed: int = 7) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(min(8, vocab_size // 2), vocab_size, size=length + 3 * i).tolist() for i in range(k)]


def _generate(adapter_name: str, model: Path, case: VerifyCase, prompts: list[list[int]], n: int,
              threads: int | None, sample_ids: list[int] | None = None) -> tuple[list[list[int]], str, str, list[int]]:
    """Greedy ids per prompt through the adapter's real serving path; its engine name and version; and the
    greedy ids after `sample_ids` (up to SAMPLE_TOKENS, stopping at EOS), for a readable sample."""
    opts = adapters.adapter_class(adapter_name).verify_options(case)
    if threads:
        opts["threads"] = threads
    ad = adapters.create(adapter_name, str(model), **opts)
    info = ad.start()
    try:
        async def one(i: int, ids: list[int]) -> list[int]:
            req = RequestSpec(f"verify-{i}", tuple(ids), max_tokens=n, ignore_eos=True)
            return [t async for ch in ad.stream(req) for t in (ch.token_ids or ())]

        async def run_all() -> list[list[int]]:
            return [await one(i, p) for i, p in enumerate(prompts)]  # one at a time: no batching effects

        async def sample() -> list[int]:
            if not sample_ids:
                return []
            req = RequestSpec("verify-sample", tuple(sample_ids), max_tokens=SAMPLE_TOKENS, ignore_eos=False)
            return [t async for ch in ad.stream(req) for t in (ch.token_ids or ())]

        return asyncio.run(run_all()), info.engine, info.version, asyncio.run(sample())
    finally:
        ad.close()


@dataclass(frozen=True)
class TextReference:
    """The shipped text as ids, the fp32 reference's logits over them, and the sample prompt's ids."""

    ids: list[int]
    logits: np.ndarray
    sample_ids: list[int]
    decode: object  # ids -> text with the model's tokenizer

    @classmethod
    def of(cls, model: Path) -> TextReference | None:
        from model_cache.tokenizer import load_tokenizer

        ids = tq.text_ids(model)
        tok = load_tokenizer(model)
        if not ids or tok is None or len(ids) < 2:
            return None
        return cls(ids, oracle.logits(model, ids), list(tok.encode(SAMPLE_PROMPT).ids),
                   lambda out: tok.decode(out, skip_special_tokens=True))


def verify_variant(v: Variant, model: Path, prompts: list[list[int]], refs: list[list[int]], n: int,
                   logit_steps: int = 8, threads: int | None = None,
                   text_ref: TextReference | None = None) -> VariantResult:
    why = adapters.why_unavailable(v.adapter)
    if why:
        return VariantResult(v.adapter, v.adapter, v.format, v.precision, "unavailable", detail=why)
    try:
        outs, engine, version, sample = _generate(v.adapter, model, v.case, prompts, n, threads,
                                                  text_ref.sample_ids if text_ref else None)
        div = text = quality = None
        if v.is_reference:  # own_engine's adapter encodes with the original tokenizer.json itself
            if (model / "tokenizer.json").is_file():
                text = text_check.compare(model, *text_check.original(model, skip_special=False))
            if text_ref is not None:  # own_engine fp32 is the reference: its figures are the reference's
                quality = tq.compare(text_ref.ids, text_ref.logits, text_ref.logits)
        else:
            out_dir = convert(model, v.format, v.precision)  # type: ignore[arg-type]
            if (model / "tokenizer.json").is_file():
                text = text_check.check(model, v.format, out_dir)
            fn = logits_fn(v.format, out_dir)
            try:
                steps = min(logit_steps, n)
                ref_l, got_l = [], []
                for p, r in zip(prompts, refs, strict=True):
                    seq = p + r[: steps - 1]
                    ref_l.append(oracle.logits(model, seq)[len(p) - 1:])
                    got_l.append(np.asarray(fn(seq))[len(p) - 1:])
                div = divergence(np.concatenate(ref_l), np.concatenate(got_l))
                if text_ref is not None:
                    quality = tq.compare(text_ref.ids, text_ref.logits, np.asarray(fn(text_ref.ids)))
            finally:
                getattr(fn, "close", lambda: None)()
    except (ConversionError, adapters.EngineUnavailable, FileNotFoundError) as e:
        return VariantResult(v.adapter, v.adapter, v.format, v.precision, "error", detail=str(e))
    except Exception as e:  # one broken variant is reported, the others still run
        return VariantResult(v.adapter, v.adapter, v.format, v.precision, "error",
                             detail=f"{type(e).__name__}: {e}")
    same = sum(int(a == b) for o, r in zip(outs, refs, strict=True) for a, b in zip(o, r, strict=False))
    total = sum(len(r) for r in refs)
    firsts = [_first_diff(o, r) for o, r in zip(outs, refs, strict=True)]
    first = min((f for f in firsts if f is not None), default=None)
    exact = first is None
    status: Status = "agree" if exact else ("MISMATCH" if v.strict else "quality drift")
    if text is not None and not text.ok:
        status = "MISMATCH"
    return VariantResult(v.adapter, engine, v.format, v.precision, status, total, same / total if total else None,
                         first, div.positions if div else 0, div.max_abs_diff if div else None,
                         div.kl if div else None, version, text_agreement=text.agreement if text else None,
                         text_detail=text.first_mismatch or "" if text else "",
                         quality=quality.to_dict() if quality else None,
                         sample=text_ref.decode(sample) if text_ref and sample else None)  # type: ignore[operator]


def _first_diff(out: list[int], ref: list[int]) -> int | None:
    for i, (a, b) in enumerate(zip(out, ref, strict=False)):
        if a != b:
            return i
    return None if len(out) == len(ref) else min(len(out), len(ref))


def verify(model: str | Path | None = None, *, n_tokens: int = 32, n_prompts: int = 3,
           variants: tuple[Variant, ...] | None = None, threads: int | None = None,
           with_text: bool = True) -> VerifyReport:
    """Run every variant (default: all the adapters declare) on the same prompts and compare with own_engine fp32."""
    from model_cache.resolve import resolve_model

    path = resolve_model(model)
    cfg = json.loads((path / "config.json").read_text())
    vocab = int(cfg["vocab_size"])
    prompts = make_prompts(vocab, n_prompts)
    refs = [oracle.greedy(path, p, n_tokens) for p in prompts]
    text_ref = TextReference.of(path) if with_text else None
    results = tuple(verify_variant(v, path, prompts, refs, n_tokens, threads=threads, text_ref=text_ref)
                    for v in (variants if variants is not None else all_variants()))
    return VerifyReport(str(path), n_tokens, tuple(tuple(p) for p in prompts), results, weights_of(cfg),
                        len(text_ref.ids) if text_ref else 0)


def weights_of(cfg: dict) -> str:
    """What the model's weights are, from config.json's `advisor` block: drift on random weights means little."""
    meta = cfg.get("advisor") or {}
    if meta.get("gguf"):
        g = meta["gguf"]
        return f"trained: imported from {g.get('file')} ({g.get('quantization')}, sha256 {str(g.get('sha256'))[:12]})"
    if meta.get("preset"):
        return f"random: preset {meta['preset']} (quality figures on random weights say little about a real model)"
    return "as found in the folder (not made by advisor)"
