"""What callers learn from an adapter's declared `Capabilities` and methods, never from its name."""

from __future__ import annotations

import pytest

import adapters
from adapters.base import REFERENCE_FORMAT, EngineOptions
from adapters.fake import FakeAdapter, FakeOptions


@pytest.mark.parametrize("name", sorted(adapters.REGISTRY))
def test_a_batched_channel_is_declared_exactly_where_it_is_offered(name):
    cls = adapters.adapter_class(name)
    offered = all(callable(getattr(cls, m, None)) for m in ("open_channel", "submit", "cancel"))
    assert cls.capabilities.batched_channel == offered, name


@pytest.mark.parametrize("name", sorted(adapters.REGISTRY))
def test_every_verify_case_builds_options_the_adapter_takes(name):
    cls = adapters.adapter_class(name)
    for case in cls.capabilities.verify:
        opts = adapters.parse_options(name, cls.verify_options(case))  # an OptionsError names a stale key
        assert getattr(opts, "precision", case.precision) == case.precision or case.format == REFERENCE_FORMAT


def test_verify_variants_come_from_the_adapters_reference_first():
    from advisor.quality.verify import all_variants

    variants = all_variants()
    assert variants[0].is_reference and variants[0].strict and variants[0].precision == "fp32"
    assert sum(v.is_reference for v in variants) == 1
    assert all(v.strict for v in variants if v.precision == "fp32")
    declared = [(n, c.format, c.precision) for n in adapters.REGISTRY
                for c in adapters.adapter_class(n).capabilities.verify]
    assert [(v.adapter, v.format, v.precision) for v in variants] == declared


def test_each_model_source_matches_how_the_engine_is_reached():
    for name in adapters.REGISTRY:
        caps = adapters.capabilities(name)
        assert caps is not None and caps.served == (caps.model_source == "served"), name
    assert adapters.capabilities("no-such-engine") is None  # a run recorded by another install
    assert adapters.capabilities(adapters.TEST_ENGINE).model_source == "none"
    assert adapters.capabilities(adapters.BUILTIN_ENGINE).builtin
    assert adapters.capabilities(adapters.BUILTIN_STATIC_ENGINE).builtin


def test_options_of_another_type_are_refused_once_with_the_type_to_use():
    with pytest.raises(TypeError, match="the fake adapter takes FakeOptions, not EngineOptions"):
        FakeAdapter(None, EngineOptions())
    assert FakeAdapter(None).options == FakeOptions()  # none given: the adapter's defaults


def test_a_served_adapter_need_not_repeat_where_its_model_comes_from():
    from adapters.base import Capabilities

    assert Capabilities(served=True, per_chunk_tokens=False).model_source == "served"
    assert Capabilities(served=False, per_chunk_tokens=True).model_source == "folder"
    with pytest.raises(AssertionError):
        Capabilities(served=True, per_chunk_tokens=False, model_source="hub")
