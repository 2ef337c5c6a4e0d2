"""Engine x hardware compatibility in engines.yaml: every engine rated, every claim sourced and dated (issue 26)."""

from __future__ import annotations

from adapters import REGISTRY
from advisor.catalog import load_catalog


def test_every_registered_engine_has_sourced_dated_stack_claims():
    cat = load_catalog()
    for name in REGISTRY:
        ops = cat.engine_ops(name)
        assert ops is not None, f"{name} missing from engines.yaml"
        assert ops.served or ops.runs_on, f"{name}: no stack claims"
        for claim in ops.runs_on:
            assert claim.source and claim.as_of, f"{name} on {claim.stack}: no source or date"


def test_hardware_stacks_and_the_claims_that_matter():
    cat = load_catalog()
    assert cat.get("h200").stack == "cuda" and cat.get("mi300x").stack == "rocm"
    assert cat.get("cpu-2core-vm").stack == "cpu-x86"
    own = cat.engine_ops("own")
    assert own.claim("rocm") is None and own.claim("cuda").advisor_ran  # run on the H200, never on ROCm
    assert cat.engine_ops("openvino").claim("cuda") is None
    assert [c.stack for c in cat.engine_ops("tensorrt_llm").runs_on] == ["cuda"]
