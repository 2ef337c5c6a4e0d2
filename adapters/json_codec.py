"""JSON on the load generator's hot path: orjson where installed (the `[fast]` extra), else the standard library.

Every streamed request encodes one body and decodes its events; orjson does
both in C at a fraction of `json`'s cost. Only the fast path uses it: a
document orjson refuses (NaN, integers past 64 bits) raises ValueError here,
and callers that must accept those fall back to `json` (adapters.openai_stream).
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # the stock codec: the same documents, slower
    orjson = None


def name() -> str:
    """The codec in use, with its version: "orjson 3.13.0" or "json"."""
    return f"orjson {orjson.__version__}" if orjson is not None else "json"


if orjson is not None:
    loads = orjson.loads  # bytes or str -> object; ValueError (orjson.JSONDecodeError) when malformed

    def dumps(obj: Any) -> bytes:
        """Compact UTF-8 JSON."""
        return orjson.dumps(obj)
else:
    loads = json.loads

    def dumps(obj: Any) -> bytes:
        """Compact UTF-8 JSON."""
        return json.dumps(obj, separators=(",", ":")).encode()
