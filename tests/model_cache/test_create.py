"""`create_model`: deterministic bytes, a folder transformers loads offline, a printable tokenizer, the cache."""

from __future__ import annotations

import json

import pytest

from model_cache.create import create_model
from model_cache.presets import PRESETS
from model_cache.resolve import resolve_model

FILES = ("model.safetensors", "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
         "special_tokens_map.json")


def test_same_seed_same_bytes_other_seed_other_weights(tiny_path, tmp_path) -> None:
    again = create_model("tiny", "tiny", root=tmp_path)
    for name in FILES:
        assert (again / name).read_bytes() == (tiny_path / name).read_bytes(), name
    other = create_model("tiny", "tiny", seed=1, root=tmp_path / "o")
    assert (other / "model.safetensors").read_bytes() != (tiny_path / "model.safetensors").read_bytes()


def test_config_has_old_and_new_keys_and_the_preset_shape(tiny_path) -> None:
    cfg = json.loads((tiny_path / "config.json").read_text())
    p = PRESETS["tiny"]
    assert cfg["rope_parameters"]["rope_theta"] == cfg["rope_theta"] == p.rope_theta
    assert cfg["dtype"] == cfg["torch_dtype"] == "float32"
    assert cfg["hidden_size"] == p.hidden_size and cfg["vocab_size"] == p.vocab_size
    assert cfg["max_position_embeddings"] >= 4096


def test_transformers_loads_tokenizer_and_every_token_the_model_emits_is_printable(tiny_path) -> None:
    transformers = pytest.importorskip("transformers")
    from safetensors.torch import load_file
    from tokenizers import Tokenizer

    tok = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    assert tok.eos_token_id == 1 and tok.bos_token_id == 0 and len(tok) == PRESETS["tiny"].vocab_size
    for text in ("The engine decodes tokens.", "Héllo café 日本 🙂"):  # all 256 bytes: nothing is dropped
        assert tok.decode(tok(text)["input_ids"]) == text
    fast = Tokenizer.from_file(str(tiny_path / "tokenizer.json"))
    head = load_file(str(tiny_path / "model.safetensors"))["lm_head.weight"]
    texts = fast.decode_batch([[i] for i in range(len(tok))])
    silent = {i for i in range(len(tok)) if not head[i].any()}
    assert {0, 1, 2} <= silent and len(silent) < 200  # specials and the unprintable byte tokens only
    for i, s in enumerate(texts):
        if i not in silent:
            assert s and all(c == "\n" or " " <= c <= "~" for c in s), (i, s)


def test_existing_model_needs_force(tiny_path, tmp_path) -> None:
    create_model("m", "tiny", root=tmp_path)
    with pytest.raises(FileExistsError, match="--force"):
        create_model("m", "tiny", root=tmp_path)
    assert create_model("m", "tiny", root=tmp_path, force=True) == tmp_path / "m"
    with pytest.raises(ValueError, match="unknown preset"):
        create_model("x", "huge", root=tmp_path)
    with pytest.raises(ValueError, match="plain folder name"):
        create_model("../x", "tiny", root=tmp_path)


def test_resolve_model_creates_the_default_once_and_finds_names(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    path = resolve_model(None)
    assert path == tmp_path / "models" / "tiny" and (path / "model.safetensors").is_file()
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    assert resolve_model(None) == path and (path / "model.safetensors").stat().st_mtime_ns == stamp
    assert resolve_model("tiny") == path
    assert resolve_model(str(path)) == path
    with pytest.raises(FileNotFoundError, match="advisor models create nope"):
        resolve_model("nope")


def test_presets_have_the_promised_shapes() -> None:
    assert PRESETS["tiny"].n_params < 2_000_000
    small = PRESETS["small-100m"]
    assert (small.hidden_size, small.num_hidden_layers, small.num_attention_heads, small.num_key_value_heads,
            small.intermediate_size, small.vocab_size, small.max_position_embeddings) == (
        768, 12, 12, 4, 2048, 16000, 2048)
    assert 0.9e9 < PRESETS["llama-1b"].n_params < 1.3e9


# `models create --force` in a child process that SIGKILLs itself while writing, or between moving the old model
# aside and renaming the new one in (model_cache.staging)
KILLED_CREATE = """
import os, signal, sys
from pathlib import Path
import model_cache.create as create

root, when = Path(sys.argv[1]), sys.argv[2]
real_write, real_rename = create._write, os.rename

def write(*args):
    real_write(*args)
    if when == "writing":
        os.kill(os.getpid(), signal.SIGKILL)

def rename(src, dst):
    if when == "swapping" and Path(dst) == root / "m":
        os.kill(os.getpid(), signal.SIGKILL)
    real_rename(src, dst)

create._write, os.rename = write, rename
create.create_model("m", "tiny", root=root, force=True, seed=1)
"""


@pytest.mark.parametrize("when", ["writing", "swapping"])
def test_a_killed_create_force_leaves_a_model_and_no_leftovers(tmp_path, when) -> None:
    # was: the old model was deleted before the new one was renamed in, and a killed writer's folder stayed
    import os
    import subprocess
    import sys
    from pathlib import Path

    from model_cache.paths import is_model_dir

    root = Path(__file__).resolve().parents[2]
    create_model("m", "tiny", root=tmp_path)
    child = subprocess.run([sys.executable, "-c", KILLED_CREATE, str(tmp_path), when], cwd=root,
                           env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    assert child.returncode == -9
    assert any(p.name.startswith(".") for p in tmp_path.iterdir())  # what the killed one left
    with pytest.raises(FileExistsError):  # the next create finds a model in place (restored if it was aside)
        create_model("m", "tiny", root=tmp_path)
    assert is_model_dir(tmp_path / "m") and not any(p.name.startswith(".") for p in tmp_path.iterdir())
