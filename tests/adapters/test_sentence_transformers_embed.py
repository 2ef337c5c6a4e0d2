"""The sentence-transformers adapter on a tiny random BERT made here (no download): counts, vectors, refusals."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from adapters import embedders
from adapters.base import AdapterError, EngineUnavailable
from adapters.embed_base import EmbedRequest

pytest.importorskip("sentence_transformers")

WORDS = "the a and of to in he that his was for on is with they be at one have this".split()


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordPiece
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-st")
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf_tok = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                               sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)).save_pretrained(root / "hf")
    hf_tok.save_pretrained(root / "hf")
    word = models.Transformer(str(root / "hf"), max_seq_length=16)
    st = SentenceTransformer(modules=[word, models.Pooling(32, "mean"), models.Normalize()], device="cpu")
    st.save(str(root / "st"))
    return root / "st"


def test_vectors_match_encode_and_tokens_are_the_tokenizers(tiny_st: Path) -> None:
    from sentence_transformers import SentenceTransformer

    a = embedders.create("sentence-transformers", str(tiny_st), {"threads": 1})
    info = a.start()
    assert info.max_model_len == 16 and info.batching == "none" and info.extra["task"] == "embed"
    texts = ("the one of his", "they have this and that")
    res = asyncio.run(a.embed(EmbedRequest("r", texts, return_vectors=True)))
    with pytest.raises(AdapterError, match="exceeds the model's max_seq_length 16") as e:
        asyncio.run(a.embed(EmbedRequest("long", ("the " * 30,))))
    assert e.value.kind == "refused"
    a.close()
    ref = SentenceTransformer(str(tiny_st), device="cpu").encode(list(texts))
    assert res.n_tokens == (4 + 2) + (5 + 2) and res.dim == 32  # words + [CLS] and [SEP]
    for got, want in zip(res.vectors, ref):
        assert sum(x * y for x, y in zip(got, want)) == pytest.approx(1.0, abs=1e-5)


def test_a_generation_model_is_refused_in_one_line_before_loading(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    a = embedders.create("sentence-transformers", str(tmp_path))
    with pytest.raises(EngineUnavailable, match="generation model, not an embedding model") as e:
        a.start()
    assert "\n" not in str(e.value)


def test_an_input_past_the_models_length_stops_the_run_before_measuring(tiny_st: Path, tmp_path: Path) -> None:
    from advisor.embed.bench import EmbedInputError, run_embed

    yaml = tmp_path / "long.yaml"
    yaml.write_text("name: long\ndescription: inputs longer than the tiny model's 16 tokens\n"
                    "workload: {task: embed, embed: {inputs_per_request: 2, chunk_words: 40}}\n"
                    "arrival: {process: constant, rate_rps: 5}\nduration_s: 2\n")
    with pytest.raises(EmbedInputError, match="longest request before measuring.*max_seq_length 16") as e:
        run_embed(str(yaml), "sentence-transformers", str(tiny_st), {"threads": 1}, out_root=tmp_path / "runs")
    assert "\n" not in str(e.value) and not (tmp_path / "runs").exists()


@pytest.fixture(scope="module")
def tiny_ce(tiny_st: Path) -> Path:
    """A seeded random cross-encoder on the tiny model's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = tiny_st.parent / "ce"
    torch.manual_seed(1)
    cfg = BertConfig.from_pretrained(tiny_st.parent / "hf", num_labels=1)
    BertForSequenceClassification(cfg).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_st.parent / "hf").save_pretrained(folder)
    return folder


def test_the_cross_encoder_scores_as_predict_and_counts_the_pairs(tiny_ce: Path, tiny_st: Path, tmp_path: Path) -> None:
    import torch
    from sentence_transformers import CrossEncoder

    from advisor.embed.bench import run_embed
    from scenarios.overrides import Overrides

    query, passages = "the one of his", ("they have this", "he was at one", "for the")
    a = embedders.create("sentence-transformers-rerank", str(tiny_ce), {"threads": 1})
    assert a.start().extra["task"] == "rerank"
    res = asyncio.run(a.embed(EmbedRequest("r", passages, return_vectors=True, query=query)))
    a.close()
    want = CrossEncoder(str(tiny_ce), device="cpu").predict([(query, p) for p in passages],
                                                            activation_fn=torch.nn.Sigmoid())
    assert res.scores == pytest.approx([float(w) for w in want], abs=1e-6)
    assert res.n_tokens == 3 * (4 + 2) + (3 + 4 + 2) + 3  # each pair: [CLS] query [SEP] passage [SEP]
    yaml = tmp_path / "rr.yaml"
    yaml.write_text("name: rr\ndescription: a short rerank run on the tiny cross-encoder\n"
                    "workload: {task: rerank, rerank: {passages_per_request: 4, query_words: 3, passage_words: 5}}\n"
                    "arrival: {process: constant, rate_rps: 5}\nduration_s: 2\n")
    run = run_embed(str(yaml), "sentence-transformers-rerank", str(tiny_ce), {"threads": 1},
                    Overrides(warmup_s=0.0), out_root=None)
    assert run.summary.task == "rerank" and run.summary.n_ok == run.summary.n_requests >= 9
    assert run.summary.inputs_per_s == pytest.approx(4 * run.summary.requests_per_s)
    b = embedders.create("sentence-transformers-rerank", str(tiny_st))
    with pytest.raises(EngineUnavailable, match="is an embedding model .*, not a cross-encoder"):
        b.start()
