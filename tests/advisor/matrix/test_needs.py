"""Placement checks: which node can run a cell, and the line that names what is missing when none can."""

from __future__ import annotations

import re
import sys

import pytest

from advisor.matrix.needs import label_matches, local_node, nodes_from_ray, why_unplaceable
from advisor.matrix.plan import plan_from_dict


def node(i: int, alive: bool = True, labels: dict | None = None, **res: float) -> dict:
    """A `ray.nodes()` entry."""
    return {"NodeID": f"{i:02d}" + "ab" * 27, "NodeManagerAddress": f"10.0.0.{i}", "Alive": alive,
            "Resources": {"memory": 8e9, "object_store_memory": 1e8, f"node:10.0.0.{i}": 1.0, **res},
            "Labels": labels or {}}


def cell(**kw) -> object:
    return plan_from_dict({"cells": [{"name": "c", "engine": "fake", "scenario": "chat", **kw}]}).cells[0]


CLUSTER = nodes_from_ray([node(1, CPU=2, pool_a=1), node(2, CPU=2, pool_a=1),
                          node(3, CPU=4, GPU=2, pool_b=1, **{"accelerator_type:H100": 1}, labels={"zone": "eu"})])


def test_a_cell_some_node_can_run():
    assert why_unplaceable(cell(resources={"pool_a": 1}), CLUSTER) is None
    assert why_unplaceable(cell(resources={"GPU": 2}, accelerator="H100"), CLUSTER) is None
    assert why_unplaceable(cell(labels={"zone": "in(eu,us)"}), CLUSTER) is None


def test_the_missing_resource_is_named():
    why = why_unplaceable(cell(resources={"pool_c": 1}), CLUSTER)
    assert why.startswith("cell 'c' needs pool_c: 1 but no node has it") and "pool_a, pool_b" in why
    why = why_unplaceable(cell(resources={"GPU": 4}), CLUSTER)
    assert "needs GPU: 4 but no node has it (the most one has is 2)" in why
    assert "accelerator A100" in why_unplaceable(cell(accelerator="A100"), CLUSTER)
    assert "node label zone=us" in why_unplaceable(cell(labels={"zone": "us"}), CLUSTER)


def test_resources_on_different_nodes_are_not_enough():
    why = why_unplaceable(cell(resources={"pool_a": 1, "pool_b": 1}), CLUSTER)
    assert "no single node has all of them" in why


def test_dead_nodes_do_not_count():
    nodes = nodes_from_ray([node(1, CPU=1), node(2, alive=False, CPU=1, pool_a=1)])
    assert "needs pool_a: 1" in why_unplaceable(cell(resources={"pool_a": 1}), nodes)


def test_label_selectors():
    assert label_matches("eu", "eu") and not label_matches("us", "eu") and not label_matches(None, "eu")
    assert label_matches("us", "!eu") and label_matches(None, "!eu")
    assert label_matches("b", "in(a, b)") and label_matches("c", "!in(a,b)") and not label_matches("a", "!in(a,b)")


def test_this_machine_as_a_node():
    here = local_node()
    assert here.resources["CPU"] >= 1 and here.resources["memory"] > 0
    assert why_unplaceable(cell(), [here]) is None
    why = why_unplaceable(cell(resources={"pool_a": 1}), [here])
    assert "this machine has none" in why


def test_a_cell_checks_this_node_for_what_it_names(tmp_path):
    from advisor.matrix.cell import CellError, check_here

    def check(**kw):
        check_here(plan_from_dict({"cells": [{"name": "c", "scenario": "chat", "engine": "fake", **kw}]}).cells[0])

    check(engine="openai", model="meta-llama/Llama-3-8B", options={"url": "http://127.0.0.1:9"})  # a served name
    check(engine="openai", options={"url": "http://127.0.0.1:9", "launch": f"{sys.executable} -m http.server "
                                    "--root-path /v1 --directory /tmp"})  # /v1 is not a file
    cases = [({"model": str(tmp_path / "nope")}, f"model {tmp_path / 'nope'} not found on "),
             ({"engine": "own", "model": "not-in-cache"}, "model 'not-in-cache' not found on "),
             ({"engine": "openai", "options": {"url": "http://x", "launch": "no-such-server --port 9"}},
              "server program 'no-such-server' not found on "),
             ({"engine": "openai", "options": {"url": "http://x", "launch": f"{sys.executable} serve /models/gone"}},
              "server command names /models/gone, which does not exist on "),
             ({"engine": "openai", "options": {"url": "http://x", "launch": f"{sys.executable} -m /m.gguf"}},
              "server command names /m.gguf"),
             ({"engine": "openai", "options": {"url": "http://x", "launch": f"{sys.executable} --model=/w/x"}},
              "server command names /w/x")]
    for kw, message in cases:
        with pytest.raises(CellError, match="^" + re.escape(message)):
            check(**kw)


def test_only_engines_whose_model_is_a_local_folder_look_for_it_here(monkeypatch):
    import adapters
    from advisor.matrix.cell import CellError, check_here

    monkeypatch.setattr(adapters, "why_unavailable", lambda name: None)  # the engines' packages are not the point

    def check(engine):
        check_here(plan_from_dict({"cells": [{"name": "c", "scenario": "chat", "engine": engine,
                                              "model": "org/not-in-cache"}]}).cells[0])

    check("vllm")  # model_source "hub": the engine fetches a hub id itself
    check("tensorrt_llm")
    for engine in ("llama_cpp", "transformers"):  # model_source "folder": a name must be in the model cache
        with pytest.raises(CellError, match="^model 'org/not-in-cache' not found on "):
            check(engine)
