"""Typed records and their JSON file form, both derived from one declaration: the dataclass's fields.

A result type is a dataclass that inherits `FileForm`: its fields, their types and their defaults
are written once, and `to_dict` (the JSON object) and `from_dict` (validated back into the type)
follow from them through pydantic's `TypeAdapter`. What it cannot read becomes one `FormError`
line naming the field (`summary.n_ok is str ('x'): input should be a valid integer ...`).
Three rules hold for every such type, as they did for every file advisor wrote by hand before:

- JSON has no NaN or inf: a non-finite float is written as null;
- a key an older file lacks reads as the field's default, or None where the type allows None;
- a null where the type does not allow None reads as the field's default.

A type whose older files had another shape rewrites them in its `upgrade` classmethod. A field of a
type that keeps its own `to_dict`/`from_dict` is declared `Annotated[T, OWN_FORM]`; so is a field of a
FileForm type whose `to_dict` adds to its fields (`RunSchedule`, `Settings`), since a nested field is written
by pydantic from the field declarations, not by the type's own `to_dict`. The floor below every
other package: it imports nothing of the project's, so scenarios (SLOs), adapters (EngineInfo) and advisor
(the run record) share it.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from functools import cache
from types import NoneType, UnionType
from typing import Any, Self, Union, get_args, get_origin, get_type_hints

from pydantic import GetCoreSchemaHandler, TypeAdapter, ValidationError, model_validator
from pydantic_core import core_schema


class FormError(ValueError):
    """An object that does not fit its declared type; the message is one line naming the field."""


class FileForm:
    """Base of a dataclass whose JSON form follows from its fields (see the module's docstring)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: every field, in declaration order; non-finite floats as None."""
        return json.loads(_adapter(type(self)).dump_json(self))

    @classmethod
    def from_dict(cls, d: Any) -> Self:
        """The typed record of `to_dict`'s object (or an older file's); FormError naming a field that does not fit."""
        try:
            return _adapter(cls).validate_python(d)
        except ValidationError as e:
            raise FormError(describe(e)) from None

    @classmethod
    def upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        """An older file's object in today's shape (renamed or derived keys); most types need none."""
        return d

    @model_validator(mode="before")
    @classmethod
    def _file_form(cls, d: Any) -> Any:
        if not isinstance(d, dict):
            return d
        d = cls.upgrade(d)
        absent_is_none, null_is_default = _rules(cls)
        out: dict[str, Any] = dict.fromkeys(absent_is_none - d.keys())
        out.update((k, v) for k, v in d.items() if v is not None or k not in null_is_default)
        return out


class _OwnForm:
    """`Annotated[T, OWN_FORM]`: a field whose type keeps its own `to_dict`/`from_dict` (not a FileForm)."""

    def __get_pydantic_core_schema__(self, source: type, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            lambda v: _load_own(source, v),
            serialization=core_schema.plain_serializer_function_ser_schema(lambda v: v.to_dict()))


OWN_FORM = _OwnForm()


def _load_own(cls: Any, v: Any) -> Any:
    if isinstance(v, cls):
        return v
    if not isinstance(v, dict):
        raise ValueError("input should be an object")
    try:
        return cls.from_dict(v)
    except KeyError as e:  # a hand-written from_dict reading a key its object lacks
        raise ValueError(f"missing {e}") from None
    except TypeError as e:
        raise ValueError(str(e)) from None


def describe(e: ValidationError) -> str:
    """One line for a failed validation: every missing field, else the first field that does not fit."""
    errors = e.errors(include_url=False)
    missing = [_where(x["loc"]) for x in errors if x["type"] == "missing"]
    if missing:
        return f"missing {', '.join(missing)}"
    x = errors[0]
    msg = x["msg"].removeprefix("Value error, ")
    shown = repr(x["input"])
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"{_where(x['loc']) or 'the object'} is {type(x['input']).__name__} ({shown}): {msg[:1].lower()}{msg[1:]}"


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{part}"
    return out


@cache
def _adapter(cls: type) -> TypeAdapter[Any]:
    return TypeAdapter(cls)


@cache
def _rules(cls: type) -> tuple[frozenset[str], frozenset[str]]:
    """(fields a missing key reads as None: no default, None allowed; fields a null reads as their default)."""
    hints = get_type_hints(cls)
    absent_is_none, null_is_default = set(), set()
    for f in fields(cls):  # type: ignore[arg-type]
        defaulted = f.default is not MISSING or f.default_factory is not MISSING
        if _allows_none(hints[f.name]):
            if not defaulted:
                absent_is_none.add(f.name)
        elif defaulted:
            null_is_default.add(f.name)
    return frozenset(absent_is_none), frozenset(null_is_default)


def _allows_none(hint: Any) -> bool:
    if hint is Any or hint is None or hint is NoneType:
        return True
    return get_origin(hint) in (Union, UnionType) and NoneType in get_args(hint)


__all__ = ["OWN_FORM", "FileForm", "FormError", "describe"]
