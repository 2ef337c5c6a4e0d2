"""Logits and greedy tokens of own_engine against transformers' LlamaForCausalLM on the same folder."""

from __future__ import annotations

import torch

from own_engine.core.engine_config import EngineConfig
from own_engine.core.llm_engine import LLMEngine
from own_engine.core.sampling_params import SamplingParams
from own_engine.model import reference
from tests.own_engine.conftest import hf_greedy, hf_logits

ATOL = 1e-4


class LogitRecorder:
    """Wraps the engine's sampler: records (seq_id, len(seq) at sampling, logits row) for every step."""

    def __init__(self, engine: LLMEngine) -> None:
        self.inner = engine.runner.sampler
        self.rows: list[tuple[int, int, torch.Tensor]] = []
        engine.runner.sampler = self

    def __call__(self, logits: torch.Tensor, seqs) -> list[int]:
        for row, seq in zip(logits, seqs, strict=True):
            self.rows.append((seq.seq_id, len(seq), row.clone()))
        return self.inner(logits, seqs)


def test_reference_prefill_logits_match_transformers(tiny_path, hf_model) -> None:
    ids = [5, 17, 300, 42, 1999, 7, 7, 64]
    ours = reference.logits(tiny_path, ids)
    assert ours.shape == (len(ids), 2048) and ours.dtype == torch.float32
    torch.testing.assert_close(ours, hf_logits(hf_model, ids), atol=ATOL, rtol=0)


def test_paged_decode_logits_match_transformers(tiny_path, hf_model) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=4))  # small blocks: decode crosses many block edges
    rec = LogitRecorder(engine)
    prompt = [11, 12, 13, 14, 15, 16, 17]
    [out] = engine.generate([prompt], SamplingParams(max_tokens=12, ignore_eos=True))
    full = prompt + out
    ref = hf_logits(hf_model, full)
    assert len(rec.rows) == 12
    for _, n, row in rec.rows:  # the row sampled when the sequence had n tokens predicts token n
        torch.testing.assert_close(row, ref[n - 1], atol=ATOL, rtol=0)
    assert out == hf_greedy(hf_model, prompt, 12)


def test_mixed_batch_joining_at_different_steps_matches_transformers(tiny_path, hf_model) -> None:
    engine = LLMEngine(EngineConfig(tiny_path, device="cpu", block_size=8))
    rec = LogitRecorder(engine)
    prompts = {0: [3, 4, 5], 1: list(range(100, 140)), 2: [9], 3: list(range(500, 517))}
    params = SamplingParams(max_tokens=10, ignore_eos=True)
    join_at = {0: 0, 1: 0, 2: 3, 3: 5}  # request i is added before engine step join_at[i]
    seq_of: dict[int, int] = {}
    outs: dict[int, list[int]] = {}
    step = 0
    while len(seq_of) < len(prompts) or engine.has_unfinished():
        for i, at in join_at.items():
            if at == step:
                seq_of[i] = engine.add_request(prompts[i], params)
                outs[seq_of[i]] = []
        for seq_id, toks, _ in engine.step():
            outs[seq_id].extend(toks)
        step += 1
    assert engine.max_batch_seen >= 3  # requests really shared decode steps
    for i, prompt in prompts.items():
        out = outs[seq_of[i]]
        ref = hf_logits(hf_model, prompt + out)
        rows = [(n, row) for sid, n, row in rec.rows if sid == seq_of[i]]
        assert len(rows) == 10
        for n, row in rows:
            torch.testing.assert_close(row, ref[n - 1], atol=ATOL, rtol=0)
        assert out == hf_greedy(hf_model, prompt, 10), f"request {i}"


def test_reference_greedy_matches_transformers_generate(tiny_path, hf_model) -> None:
    prompt = [200, 201, 202]
    assert reference.greedy(tiny_path, prompt, 8) == hf_greedy(hf_model, prompt, 8)


def test_tied_embeddings_match_transformers(tiny_path, tmp_path) -> None:
    import json
    import shutil

    import transformers
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "tied"
    shutil.copytree(tiny_path, folder)
    weights = load_file(str(folder / "model.safetensors"))
    del weights["lm_head.weight"]
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    cfg = json.loads((folder / "config.json").read_text())
    cfg["tie_word_embeddings"] = True
    (folder / "config.json").write_text(json.dumps(cfg))
    hf = transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    ids = [5, 6, 7, 300, 301]
    torch.testing.assert_close(reference.logits(folder, ids), hf_logits(hf, ids), atol=ATOL, rtol=0)
