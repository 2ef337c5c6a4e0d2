"""A type's JSON form follows from its fields: the three rules every saved file relies on, and one-line errors."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import pytest

from fileform import OWN_FORM, FileForm, FormError


@dataclass(frozen=True)
class Legacy:
    """A type that keeps its own hand-written form (as RunSchedule and SLOs do)."""

    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"legacy_name": self.name}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Legacy:
        return cls(d["legacy_name"])


@dataclass(frozen=True, slots=True)
class Inner(FileForm):
    n: int
    mean: float | None = None


@dataclass(frozen=True)
class Outer(FileForm):
    kind: Literal["a", "b"]
    rate: float | None  # no default: an older file without it reads None
    inner: Inner
    legacy: Annotated[Legacy, OWN_FORM]
    rows: tuple[Inner, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    renamed: int = 0

    @classmethod
    def upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        return {**d, "renamed": d["old_name"]} if "old_name" in d else d


def _outer() -> Outer:
    return Outer("a", 2.5, Inner(3, 1.5), Legacy("x"), (Inner(1), Inner(2, 0.5)), {"k": [1, 2]}, 4)


def test_the_form_is_the_fields_in_order_and_reads_back_the_same():
    d = _outer().to_dict()
    assert list(d) == ["kind", "rate", "inner", "legacy", "rows", "extra", "renamed"]
    assert d["rows"] == [{"n": 1, "mean": None}, {"n": 2, "mean": 0.5}] and d["legacy"] == {"legacy_name": "x"}
    assert Outer.from_dict(json.loads(json.dumps(d))) == _outer()


def test_json_has_no_nan_a_missing_key_defaults_and_a_null_reads_as_the_default():
    assert Inner(1, float("nan")).to_dict() == {"n": 1, "mean": None}
    assert Outer(**{**_outer().__dict__, "rate": float("inf")}).to_dict()["rate"] is None
    old = {"kind": "b", "inner": {"n": 1}, "legacy": {"legacy_name": "y"}, "rows": None, "extra": None, "old_name": 9}
    back = Outer.from_dict(old)
    assert back == Outer("b", None, Inner(1), Legacy("y"), (), {}, 9)  # rate absent: None; nulls: the defaults


@pytest.mark.parametrize(("d", "said"), [
    ({"kind": "c"}, "kind is str ('c'): input should be 'a' or 'b'"),
    ({"inner": {"n": "three"}}, "inner.n is str ('three'): input should be a valid integer"),
    ({"rows": [{"n": 1}, {"n": 1.5}]}, "rows[1].n is float (1.5): input should be a valid integer"),
    ({"legacy": {}}, "legacy is dict ({}): missing 'legacy_name'"),
    ({"inner": {}}, "missing inner.n"),
])
def test_what_does_not_fit_is_one_line_naming_the_field(d, said):
    with pytest.raises(FormError) as e:
        Outer.from_dict({**_outer().to_dict(), **d})
    assert str(e.value).startswith(said) and "\n" not in str(e.value), str(e.value)
