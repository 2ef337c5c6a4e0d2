"""The plain-read safetensors reader gives the same tensors as the safetensors package, and refuses bad files."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from own_engine.model.safetensors_read import SafetensorsFile, SafetensorsFormatError


def test_tensors_equal_what_safetensors_wrote(tmp_path) -> None:
    tensors = {"a.weight": torch.randn(3, 5), "b.bf16": torch.randn(7).to(torch.bfloat16),
               "c.half": torch.randn(2, 2, 2).half(), "d.ids": torch.arange(6, dtype=torch.int64).view(2, 3),
               "e.scalar": torch.tensor(2.5), "f.empty": torch.empty(0, 4)}
    path = tmp_path / "m.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})
    with SafetensorsFile(path) as f:
        assert sorted(f.keys()) == sorted(tensors)
        for name in f.keys():
            got = f.get_tensor(name)
            assert got.dtype == tensors[name].dtype and got.shape == tensors[name].shape
            assert torch.equal(got, tensors[name]), name


def test_truncated_and_garbage_files_are_refused(tmp_path) -> None:
    path = tmp_path / "m.safetensors"
    save_file({"w": torch.randn(64, 64)}, str(path))
    data = path.read_bytes()
    path.write_bytes(data[:-100])
    with SafetensorsFile(path) as f, pytest.raises(SafetensorsFormatError, match="truncated"):
        f.get_tensor("w")
    path.write_bytes(b"\xff" * 64)
    with pytest.raises(SafetensorsFormatError, match="header length"):
        SafetensorsFile(path)
    path.write_bytes((20).to_bytes(8, "little") + b"{not json at all!!!}" + b"\0" * 8)
    with pytest.raises(SafetensorsFormatError, match="not JSON"):
        SafetensorsFile(path)
