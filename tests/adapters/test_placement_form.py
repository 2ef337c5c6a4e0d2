"""The placement a run records (result.json's `engine.placement`) is `Placement`'s fields, as the shipped runs hold it."""

from __future__ import annotations

import json

import pytest

from adapters.placement import Placement, plan
from tests.advisor.recommend.h200 import H200_DIR


@pytest.mark.parametrize("result", sorted(H200_DIR.glob("*/result.json")), ids=lambda p: p.parent.name)
def test_a_shipped_runs_placement_reads_back_and_writes_the_same_keys(result):
    saved = json.loads(result.read_text())["engine"]["placement"]
    own = {k: v for k, v in saved.items() if k not in ("engine_pid", "isolated")}  # added by the engine process
    p = Placement.from_dict(own)
    assert p.engine_cpus == tuple(range(1, 16)) and p.client_cpus == (0,)
    assert json.dumps(p.to_dict()) == json.dumps(own)


def test_an_unpinned_placement_writes_nulls():
    p = plan(1, (0,))  # one CPU: nothing to pin
    assert p.to_dict() == {"engine_threads": 1, "engine_cpus": None, "client_cpus": None, "note": p.note}
