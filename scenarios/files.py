"""Reading trace and log files line by line: plain or gzip-compressed, always UTF-8.

A file is gzip when its first two bytes say so (whatever its name), so a
`.csv.gz` trace and a compressed gateway log read like plain text. Lines are
decoded one at a time, so a byte that is not UTF-8 is reported with its file
and line instead of as a codec traceback; nothing is read whole into memory,
and no line longer than MAX_LINE_BYTES either (a file of one endless line, or a
small gzip that inflates to one, is refused at that line, not read to its end).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from scenarios.errors import ScenarioError

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = "\ufeff"
MAX_LINE_BYTES = 16 << 20  # a trace row is ~100 bytes; a gateway log line with whole prompts a few MB


def is_gzip(path: str | Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def open_binary(path: str | Path) -> IO[bytes]:
    """The file's bytes, decompressed on the fly when it is gzip."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")  # noqa: SIM115 (caller closes)


def text_lines(path: str | Path, what: str = "file") -> Iterator[tuple[int, str]]:
    """(line number from 1, line without its newline) for every line; a leading BOM is dropped.

    Raises ScenarioError naming `what`, the file and the line for bytes that are not UTF-8 or a
    damaged gzip stream.
    """
    line_no = 0
    try:
        with open_binary(path) as f:
            for line_no, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), start=1):
                if len(raw) > MAX_LINE_BYTES:
                    raise ScenarioError(f"{what} {path}, line {line_no}: longer than {MAX_LINE_BYTES >> 20} MiB; "
                                        "a row of a trace or log is one line of a few KB: check the file's format")
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise ScenarioError(f"{what} {path}, line {line_no}: not UTF-8 text (byte 0x{raw[e.start]:02x} "
                                        f"at column {e.start + 1}); save the file as UTF-8") from None
                if line_no == 1 and text.startswith(_BOM):
                    text = text[1:]
                yield line_no, text.rstrip("\r\n")
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise ScenarioError(f"{what} {path}, line {line_no + 1}: damaged gzip data ({e}); "
                            "recompress or decompress the file") from None
    except OSError as e:
        raise ScenarioError(f"cannot read {what} {path}: {e.strerror or e}; check the path") from None
