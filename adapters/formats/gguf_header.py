"""A bounded walk of a GGUF file's header, run before the `gguf` package reads it.

`gguf.GGUFReader` believes every count and length in the header: an array of 2^40 uint8 in a 116-byte
file makes it loop and grow lists without end. This walk reads the same fields (magic, version,
tensor count, KV count, each KV's key, type and value, each tensor's name, dims, type and offset)
through a memory map, checks every count and length against the bytes left in the file *before*
stepping over it, and allocates nothing in proportion to them. It keeps nothing: it only refuses, in
one line naming the field, a header that cannot fit its file. Written by hand because the package has
no such check; the layout is llama.cpp's GGUF spec (docs/gguf.md there), versions 2 and 3, either byte order.
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

# GGUF value types -> size in bytes of a scalar; STRING (8) and ARRAY (9) are walked
_SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
_MIN_VALUE_BYTES = 1  # the smallest value of any type (a uint8, a bool)
_MIN_KV_BYTES = 8 + 4 + _MIN_VALUE_BYTES  # key length, type, value
_MIN_TENSOR_BYTES = 8 + 4 + 4 + 8  # name length, n_dims, type, offset (no dims, empty name)
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_ARRAY_DEPTH = 4  # nested arrays deeper than this are not a model's metadata


class HeaderError(ValueError):
    """The header cannot fit its file; the message names the field."""


class _Walk:
    def __init__(self, buf: mmap.mmap | bytes, name: str) -> None:
        self.buf, self.name, self.pos, self.order = buf, name, 0, "<"

    @property
    def left(self) -> int:
        return len(self.buf) - self.pos

    def bad(self, field: str, what: str) -> HeaderError:
        return HeaderError(f"{self.name} is truncated or corrupt: {field} {what} (at byte {self.pos} of {len(self.buf)}); "
                           "a GGUF header must fit its file")

    def need(self, field: str, n_bytes: int) -> None:
        if n_bytes > self.left:
            raise self.bad(field, f"needs {n_bytes:,} bytes, {self.left:,} are left")

    def num(self, field: str, fmt: str) -> int:
        size = struct.calcsize(fmt)
        self.need(field, size)
        (v,) = struct.unpack_from(self.order + fmt, self.buf, self.pos)
        self.pos += size
        return int(v)

    def count(self, field: str, min_each: int) -> int:
        """A uint64 count of items of at least `min_each` bytes, refused when they cannot fit what is left."""
        n = self.num(field, "Q")
        if n * min_each > self.left:
            raise self.bad(field, f"is {n:,}: at least {n * min_each:,} bytes, {self.left:,} are left")
        return n

    def skip(self, field: str, n_bytes: int) -> None:
        self.need(field, n_bytes)
        self.pos += n_bytes

    def string(self, field: str) -> None:
        self.skip(field, self.count(f"{field} length", 1))

    def value(self, field: str, vtype: int, depth: int = 0) -> None:
        if vtype in _SCALAR_BYTES:
            self.skip(field, _SCALAR_BYTES[vtype])
        elif vtype == _STRING:
            self.string(field)
        elif vtype == _ARRAY:
            if depth >= MAX_ARRAY_DEPTH:
                raise self.bad(field, f"nests arrays deeper than {MAX_ARRAY_DEPTH}")
            itype = self.num(f"{field} item type", "I")
            if itype in _SCALAR_BYTES:
                self.skip(field, self.count(f"{field} array length", _SCALAR_BYTES[itype]) * _SCALAR_BYTES[itype])
            elif itype in (_STRING, _ARRAY):
                for _ in range(self.count(f"{field} array length", 8 if itype == _STRING else 12)):
                    self.value(field, itype, depth + 1)
            else:
                raise self.bad(f"{field} item type", f"is {itype}, not a GGUF value type")
        else:
            raise self.bad(f"{field} type", f"is {vtype}, not a GGUF value type")


def check_header(path: str | Path) -> None:
    """Refuse (HeaderError, one line naming the field) a GGUF header whose counts or lengths cannot fit the file."""
    path = Path(path)
    with path.open("rb") as fh:
        if path.stat().st_size == 0:
            raise HeaderError(f"{path.name} is empty; a GGUF file starts with b'GGUF'")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            _walk(_Walk(buf, path.name))


def _walk(w: _Walk) -> None:
    w.need("magic", 4)
    if bytes(w.buf[:4]) != b"GGUF":
        raise w.bad("magic", f"is {bytes(w.buf[:4])!r}, not b'GGUF'")
    w.pos = 4
    version = w.num("version", "I")
    if version & 0xFFFF == 0:  # written on a machine of the other byte order, as GGUFReader detects it
        w.order = ">"
        version = int.from_bytes(version.to_bytes(4, "little"), "big")
    if version not in (2, 3):
        raise w.bad("version", f"is {version}; GGUF versions 2 and 3 can be read")
    tensor_count = w.count("tensor count", _MIN_TENSOR_BYTES)
    kv_count = w.count("KV count", _MIN_KV_BYTES)
    for i in range(kv_count):
        start = w.pos
        w.string(f"KV {i} key")
        key = bytes(w.buf[start + 8:w.pos]).decode("utf-8", "replace")[:60]
        w.value(f"KV '{key}'", w.num(f"KV '{key}' type", "I"))
    for i in range(tensor_count):
        w.string(f"tensor {i} name")
        n_dims = w.num(f"tensor {i} dimension count", "I")
        if n_dims > MAX_DIMS:
            raise w.bad(f"tensor {i} dimension count", f"is {n_dims:,}, more than {MAX_DIMS}")
        w.skip(f"tensor {i} dims", 8 * n_dims)
        w.skip(f"tensor {i} type and offset", 4 + 8)
