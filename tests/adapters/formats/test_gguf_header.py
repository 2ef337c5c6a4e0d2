"""A crafted GGUF header is refused in one line before the `gguf` package reads it (issue 40, item 3).

The package's reader believes every count: a KV holding an array of 2^40 uint8 in a 116-byte file made
`models import` grow by ~120 MB/s until killed. The CLI case runs in a child under a 1.5 GB address-space
limit and a timeout, so a regression fails the test instead of eating the machine.
"""

from __future__ import annotations

import resource
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.formats.gguf_header import HeaderError, check_header

REPO = Path(__file__).resolve().parents[3]


def _str(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _header(tensor_count: int, kv_count: int, body: bytes) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, tensor_count, kv_count) + body


def crafted_116() -> bytes:
    """The probe's file: one KV whose value is an array of 2^40 uint8, 116 bytes in all."""
    key = b"general.architecture.padding.to.make.the.file.116.bytes.lon"
    data = _header(0, 1, _str(key) + struct.pack("<IIQ", 9, 0, 1 << 40)) + b"\0" * 9
    assert len(data) == 116
    return data


def _write(tmp_path: Path, data: bytes) -> Path:
    f = tmp_path / "crafted.gguf"
    f.write_bytes(data)
    return f


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))


def test_the_116_byte_file_is_one_clean_line_under_a_memory_limit(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    f = _write(tmp_path, crafted_116())
    r = subprocess.run([sys.executable, "-m", "advisor_cli", "models", "import", str(f)], cwd=REPO,
                       env={"PATH": "/usr/bin:/bin", "ADVISOR_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)},
                       capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory)
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert r.returncode == 1, r.stderr
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    assert "array length is 1,099,511,627,776" in lines[0] and "116" in lines[0], lines[0]
    assert not (tmp_path / "home" / "models").exists() or not any((tmp_path / "home" / "models").iterdir())


@pytest.mark.parametrize(("data", "field"), [
    (_header(0, 1, _str(b"general.name") + struct.pack("<IQ", 8, 1 << 60) + b"x" * 40), "general.name' length"),
    (_header(1 << 62, 0, b"\0" * 64), "tensor count is"),
    (_header(0, 1 << 50, b"\0" * 64), "KV count is"),
    (_header(1, 0, _str(b"t") + struct.pack("<I", 1 << 30) + b"\0" * 24), "tensor 0 dimension count"),
    (_header(0, 1, _str(b"a") + struct.pack("<IIQ", 9, 8, 1 << 40)), "array length"),
    (_header(0, 1, _str(b"a") + struct.pack("<I", 99) + b"\0" * 8), "type is 99"),
    (b"GGUF" + struct.pack("<I", 7) + b"\0" * 16, "version is 7"),
])
def test_a_count_or_length_that_cannot_fit_the_file_names_its_field(tmp_path: Path, data: bytes, field: str) -> None:
    with pytest.raises(HeaderError) as e:
        check_header(_write(tmp_path, data))
    assert field in str(e.value) and "\n" not in str(e.value), e.value


def test_a_huge_string_or_tensor_count_is_refused_by_import_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    from adapters.formats.gguf_import import GgufImportError, import_gguf

    for data, needle in ((_header(0, 1, _str(b"general.name") + struct.pack("<IQ", 8, 1 << 60)), "length"),
                         (_header(1 << 62, 0, b"\0" * 64), "tensor count")):
        with pytest.raises(GgufImportError, match=needle) as e:
            import_gguf(_write(tmp_path, data), "m", root=tmp_path / "out", check=False)
        assert "\n" not in str(e.value)


def test_a_real_header_walks_to_its_end(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    from adapters.formats import gguf as gguf_writer
    from model_cache.create import create_model

    out = tmp_path / "tiny.gguf"
    gguf_writer.write_gguf(create_model("tiny", "tiny", root=tmp_path / "src"), out, "fp32")
    check_header(out)  # a header the writer made is accepted, strings, string arrays and tensors included
