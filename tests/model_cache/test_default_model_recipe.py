"""The auto-made default model is remade when an older advisor made it with another recipe."""

from __future__ import annotations

import json

from model_cache.paths import RECIPE
from model_cache.resolve import resolve_model


def test_a_default_model_from_another_recipe_is_remade(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    folder = resolve_model(None)
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["advisor"]["recipe"] == RECIPE
    del cfg["advisor"]["recipe"]  # what an advisor before recipes wrote
    (folder / "config.json").write_text(json.dumps(cfg))
    (folder / "marker").write_text("old")
    assert resolve_model(None) == folder
    assert "remaking it" in capsys.readouterr().err
    assert not (folder / "marker").exists()
    assert json.loads((folder / "config.json").read_text())["advisor"]["recipe"] == RECIPE
    resolve_model(None)  # current: kept as it is
    assert "remaking" not in capsys.readouterr().err
