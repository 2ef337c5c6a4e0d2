"""Loader: safetensors only, and clear errors naming the file for missing, corrupt or mismatched weights."""

from __future__ import annotations

import shutil

import pytest

from own_engine.model.loader import ModelLoadError, load_model


def _copy(tiny_path, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(tiny_path, folder)
    return folder


def test_missing_safetensors_is_an_error_naming_the_folder(tiny_path, tmp_path) -> None:
    folder = _copy(tiny_path, tmp_path)
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match=f"no \\*.safetensors file in {folder}"):
        load_model(folder)


def test_pickled_weights_are_never_loaded(tiny_path, tmp_path) -> None:
    folder = _copy(tiny_path, tmp_path)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="pickled weights are never loaded"):
        load_model(folder)


def test_corrupt_safetensors_names_the_file(tiny_path, tmp_path) -> None:
    folder = _copy(tiny_path, tmp_path)
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ModelLoadError, match="model.safetensors is not a readable safetensors file"):
        load_model(folder)


def test_weights_that_do_not_match_config_are_refused(tiny_path, tmp_path) -> None:
    import json

    folder = _copy(tiny_path, tmp_path)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["num_hidden_layers"] = 3
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="missing tensor"):
        load_model(folder)
    cfg["num_hidden_layers"], cfg["intermediate_size"] = 2, 100
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="shape"):
        load_model(folder)
