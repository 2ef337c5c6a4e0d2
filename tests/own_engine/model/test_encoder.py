"""own_engine's BERT encoder on a tiny seeded random folder: padded batches against a plain-torch BERT per input, on
every linear kernel that runs here, every pooling mode, and the loader's refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from own_engine.model.encoder import Pooling, SentenceStack, load_encoder, pick_linears, read_stack
from own_engine.model.loader import ModelLoadError
from tests.own_engine.model.tiny_bert import POOLINGS, WORDS, make_tiny_bert, reference_vector

TEXTS = ("the one of his", "they", "he was at one with the that and this", "zebra quagga the")  # unknown -> [UNK]


def _batch(folder: Path, texts: tuple[str, ...]) -> tuple[list[list[int]], torch.Tensor, torch.Tensor]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()
    ids = [e.ids for e in tok.encode_batch(list(texts))]
    width = max(map(len, ids))
    padded = torch.tensor([x + [0] * (width - len(x)) for x in ids])
    mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
    return ids, padded, mask


def _encode(folder: Path, texts: tuple[str, ...], kernels: str = "torch") -> tuple[torch.Tensor, list[list[int]]]:
    model = load_encoder(folder)
    pick_linears(model, kernels)
    pooling = read_stack(folder).pooling
    ids, padded, mask = _batch(folder, texts)
    with torch.inference_mode():
        return pooling(model(padded, mask), mask), ids


def _assert_matches(folder: Path, got: torch.Tensor, ids: list[list[int]], pooling: str, normalize: bool) -> None:
    for row, x in zip(got, ids):
        want = reference_vector(folder, x, pooling, normalize)
        assert torch.nn.functional.cosine_similarity(row.double(), want, dim=0) >= 0.9999
        assert torch.allclose(row.double(), want, atol=1e-5, rtol=1e-4), (row, want)


@pytest.mark.parametrize("kernels", ["torch", "onednn", "panel"])
def test_a_padded_batch_matches_plain_bert_per_input_on_each_linear_kernel(tmp_path: Path, kernels: str) -> None:
    folder = make_tiny_bert(tmp_path / "bert")
    model = load_encoder(folder)
    try:
        kernel, n, _ = pick_linears(model, kernels)
    except ValueError as e:  # a named kernel that can't run here (no AVX-512, no compiler, no packed oneDNN)
        pytest.skip(str(e))
    assert n == (0 if kernels == "torch" else 2 * 4) and kernel == {"torch": "torch", "onednn": "onednn-packed", "panel": "panel-avx512"}[kernels]
    got, ids = _encode(folder, TEXTS, kernels)
    assert len({len(x) for x in ids}) > 1 and ids[1] == [2, 5 + WORDS.index("they"), 3]  # padded; [CLS] they [SEP]
    _assert_matches(folder, got, ids, "mean", True)
    alone, _ = _encode(folder, TEXTS[2:3], kernels)  # no padding: no mask at all
    assert torch.allclose(alone[0], got[2], atol=1e-6)


def test_the_panel_kernel_fed_in_row_chunks_gives_the_same_vectors(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from own_engine.model import encoder

    folder = make_tiny_bert(tmp_path / "bert")
    try:
        pick_linears(load_encoder(folder), "panel")
    except ValueError as e:
        pytest.skip(str(e))
    monkeypatch.setattr(encoder, "PANEL_ROWS", 5)  # 4 inputs x 13 tokens: 11 calls a linear, the last one short
    model = load_encoder(folder)
    pick_linears(model, "panel")
    assert isinstance(model.layers[0].qkv_proj, encoder.RowChunks) and model.layers[0].qkv_proj.rows == 5
    got, ids = _encode(folder, TEXTS, "panel")
    _assert_matches(folder, got, ids, "mean", True)
    calls: list[int] = []
    model.layers[0].up_proj.linear.register_forward_pre_hook(lambda m, args: calls.append(args[0].shape[0]))
    _, padded, mask = _batch(folder, TEXTS)
    with torch.inference_mode():
        model(padded, mask)
    assert calls == [5] * (padded.numel() // 5) + [padded.numel() % 5] * bool(padded.numel() % 5)


@pytest.mark.parametrize("pooling", sorted(POOLINGS))
def test_every_pooling_mode_with_and_without_normalize(tmp_path: Path, pooling: str) -> None:
    for normalize in (True, False):
        folder = make_tiny_bert(tmp_path / f"{pooling}-{normalize}", seed=1, pooling=pooling, normalize=normalize)
        assert read_stack(folder).pooling.mode == pooling and read_stack(folder).pooling.normalize == normalize
        got, ids = _encode(folder, TEXTS)
        _assert_matches(folder, got, ids, pooling, normalize)


def test_a_bert_prefix_and_the_unused_pooler_are_handled(tmp_path: Path) -> None:
    folder = make_tiny_bert(tmp_path / "bert", prefix="bert.")  # as BertForMaskedLM checkpoints name them
    got, ids = _encode(folder, TEXTS)
    _assert_matches(folder, got, ids, "mean", True)


def test_the_loader_refuses_what_it_cannot_run_with_the_fix(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    folder = make_tiny_bert(tmp_path / "bert")
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "model_type": "roberta"}))
    with pytest.raises(ModelLoadError, match="model_type 'roberta'.*BERT"):
        load_encoder(folder)
    (folder / "config.json").write_text(json.dumps({**cfg, "hidden_act": "relu"}))
    with pytest.raises(ModelLoadError, match="hidden_act 'relu'"):
        load_encoder(folder)
    (folder / "config.json").write_text(json.dumps(cfg))
    weights = load_file(str(folder / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if "layer.1.output.dense" not in k}, str(folder / "model.safetensors"))
    with pytest.raises(ModelLoadError, match="missing tensor.*encoder.layer.1.output.dense"):
        load_encoder(folder)
    save_file({**weights, "cls.predictions.bias": torch.zeros(3), "encoder.layer.9.extra": torch.zeros(2)},
              str(folder / "model.safetensors"))
    with pytest.raises(ModelLoadError, match="unexpected tensor 'encoder.layer.9.extra'"):
        load_encoder(folder)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(ModelLoadError, match="pickled weights are never loaded"):
        load_encoder(folder)


def test_both_sentence_transformers_layouts_are_read(tmp_path: Path) -> None:
    folder = make_tiny_bert(tmp_path / "bert", pooling="mean_sqrt_len")  # v3-5: flags, sentence_bert_config.json
    assert read_stack(folder) == SentenceStack(Pooling("mean_sqrt_len", True), 16, False)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": "cls"}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"do_lower_case": True}))  # v6: the limit moved
    assert read_stack(folder) == SentenceStack(Pooling("cls", True), 512, True)  # the tokenizer's model_max_length
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": ["mean_sqrt_len_tokens"]}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 1e30}))  # transformers' "unset"
    assert read_stack(folder) == SentenceStack(Pooling("mean_sqrt_len", True), None, True)


def test_pooling_configs_it_cannot_run_are_refused(tmp_path: Path) -> None:
    folder = make_tiny_bert(tmp_path / "bert")
    pc = folder / "1_Pooling" / "config.json"
    pc.write_text(json.dumps({**json.loads(pc.read_text()), "pooling_mode_cls_token": True}))  # cls and mean at once
    with pytest.raises(ModelLoadError, match="pooling \\['cls', 'mean'\\]"):
        read_stack(folder)
    pc.write_text(json.dumps({"pooling_mode": "weightedmean"}))
    with pytest.raises(ModelLoadError, match="pooling \\['weightedmean'\\]; the encoder runs exactly one of mean"):
        read_stack(folder)
    (folder / "modules.json").write_text(json.dumps([{"path": "", "type": "sentence_transformers.models.Transformer"},
                                                     {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    with pytest.raises(ModelLoadError, match="modules Transformer, Dense"):
        read_stack(folder)
