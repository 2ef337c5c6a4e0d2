"""Shared CLI plumbing: scenario overrides and engine options from flags, and error exits."""

from __future__ import annotations

from typing import Any, NoReturn

import click


def fail(message: str) -> NoReturn:
    raise click.UsageError(message)


def overrides_from(flags: dict[str, Any]) -> Any:
    """Overrides from the bench/sweep flags; a bad value fails with the flag's name."""
    from scenarios.schedule import Overrides

    names = {"rate": "rate_rps", "duration": "duration_s", "warmup": "warmup_s"}
    kwargs = {names.get(k, k): v for k, v in flags.items() if v not in (None, False)}
    try:
        return Overrides(**kwargs)
    except (TypeError, ValueError) as e:
        fail(str(e))


def _parse_value(v: str) -> Any:
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(v.lower(), v)


def engine_options(opts: tuple[str, ...], **named: Any) -> dict[str, Any]:
    out = {k: v for k, v in named.items() if v is not None}
    for o in opts:
        key, sep, value = o.partition("=")
        if not sep or not key:
            fail(f"--opt expects KEY=VALUE, got {o!r}")
        out[key.strip().replace("-", "_")] = _parse_value(value.strip())
    return out
