"""The three converted formats and the module that converts to each (imported only when asked for).

Its own file so that the package's `__init__` (conversion) and `text_check` (which the conversion calls)
both look a format up without importing each other.
"""

from __future__ import annotations

from typing import Any, Literal

from adapters.formats.check import ConversionError

Format = Literal["gguf", "onnx", "openvino"]
FORMATS: tuple[Format, ...] = ("gguf", "onnx", "openvino")


def format_module(fmt: str) -> Any:
    """The module of `fmt` (`adapters.formats.gguf`, ...); ConversionError naming the formats if unknown."""
    if fmt == "gguf":
        from adapters.formats import gguf as mod
    elif fmt == "onnx":
        from adapters.formats import onnx as mod
    elif fmt == "openvino":
        from adapters.formats import openvino as mod
    else:
        raise ConversionError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    return mod
