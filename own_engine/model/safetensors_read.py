"""Read a safetensors file tensor by tensor with plain file reads, so loading costs the weights' memory only once.

The `safetensors` package maps the whole file into memory; every page it
touches counts in the process's resident memory until the file is closed, so
copying a 400 MB checkpoint into the model's own (fused) weights peaked at
twice its size. Reading one tensor at a time into a fresh buffer keeps the
peak at the weights plus the largest tensor. The format is small enough to
read by hand: an 8-byte little-endian header length, a JSON header (dtype,
shape, data offsets per tensor), then the raw little-endian data.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}


class SafetensorsFormatError(ValueError):
    """The file is not a readable safetensors file; the message says what is wrong."""


class SafetensorsFile:
    """`safe_open`'s reading interface (`keys()`, `get_tensor(name)`) over plain reads; use it as a context."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = path.stat().st_size
        self._f = path.open("rb", buffering=0)
        head = self._f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 2 <= n <= self.size - 8:
            self._f.close()
            raise SafetensorsFormatError(f"header length {n} does not fit a {self.size}-byte file")
        try:
            header = json.loads(self._f.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            self._f.close()
            raise SafetensorsFormatError(f"the header is not JSON ({e})") from None
        header.pop("__metadata__", None)
        self.header: dict[str, dict] = header
        self.base = 8 + n

    def __enter__(self) -> SafetensorsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()

    def keys(self) -> list[str]:
        """Tensor names in file order (so reads go forward through the file)."""
        return sorted(self.header, key=lambda k: self.header[k]["data_offsets"][0])

    def get_tensor(self, name: str) -> torch.Tensor:
        """The tensor `name` in a buffer of its own."""
        info = self.header[name]
        dtype = DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise SafetensorsFormatError(f"tensor '{name}' has unsupported dtype {info.get('dtype')!r}")
        start, end = info["data_offsets"]
        shape = [int(d) for d in info["shape"]]
        if end - start != torch.Size(shape).numel() * dtype.itemsize or self.base + end > self.size:
            raise SafetensorsFormatError(f"tensor '{name}' has offsets {start}..{end} that do not match its "
                                         f"shape {shape} or the file size (truncated file?)")
        buf = bytearray(end - start)
        self._f.seek(self.base + start)
        if self._f.readinto(buf) != len(buf):
            raise SafetensorsFormatError(f"tensor '{name}' is cut short (truncated file?)")
        return (torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)).view(shape)
