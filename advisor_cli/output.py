"""What commands print the same way: one JSON document with NaN and infinities as null, and a refused value as one
line with exit 2 (a usage error's code, without click's usage header: the flag was right, its value was not)."""

from __future__ import annotations

import json
import math
from typing import Any

import click


class Refused(click.ClickException):
    """A value the command cannot use (unknown model or GPU, a bad file): one line naming the fix, exit 2."""

    exit_code = 2


def finite(v: Any) -> Any:
    """`v` with NaN and infinities as null (JSON has neither) and tuples as lists."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [finite(x) for x in v]
    return v


def json_document(v: Any) -> str:
    """One JSON document for `--json`: never NaN or Infinity, which JSON parsers refuse."""
    return json.dumps(finite(v), allow_nan=False)
