"""The `ray` group's cluster: three nodes, two with the same custom resource, one with another.

    head  pool_b: 1, accelerator_type:H100: 1 (as Ray declares a node with an H100), label zone=b
    a1    pool_a: 1, label zone=a
    a2    pool_a: 1, label zone=a

One CPU each, 80 MB object store each. Started once per session; a test that kills a node restarts it.
"""

from __future__ import annotations

import os

import pytest

from tests.ray.cluster import LocalRayCluster, NodeSpec

HEAD = NodeSpec("head", resources={"pool_b": 1, "accelerator_type:H100": 1}, labels={"zone": "b"})
WORKERS = [NodeSpec("a1", resources={"pool_a": 1}, labels={"zone": "a"}),
           NodeSpec("a2", resources={"pool_a": 1}, labels={"zone": "a"})]


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    os.environ["ADVISOR_HOME"] = str(tmp_path_factory.mktemp("advisor-home"))  # the nodes' model cache
    c = LocalRayCluster(HEAD, WORKERS)
    yield c
    c.shutdown()


@pytest.fixture
def healed(cluster):
    """The cluster with all three nodes alive again after the test (for tests that kill nodes)."""
    yield cluster
    for spec in WORKERS:
        if spec.name not in cluster.alive():
            cluster.restart(spec.name)
