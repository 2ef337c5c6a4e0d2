"""A real multi-node Ray cluster on this machine, for tests (the `ray` group: scripts/test_ray.sh).

`LocalRayCluster` starts a head and worker nodes with `ray.cluster_utils.Cluster`: every node is a real
raylet with its own resources, labels and a capped object store, all on 127.0.0.1. Nodes are named, so
a test can read where a task ran (`name_of(node_id)`), kill a node the hard way (`kill(name)`: its
raylet and workers get SIGKILL, as when a machine dies) and bring it back (`restart(name)`).

It must run inside a private network namespace with only loopback (`unshare -n`, `ip link set lo up`):
outside one, Ray binds to the machine's other addresses and probes an outside resolver. `require_private_netns()`
refuses to start otherwise. Small settings: no dashboard, no usage stats, one CPU per node by default.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

OBJECT_STORE_BYTES = 80 * 2**20


@dataclass(frozen=True)
class NodeSpec:
    name: str
    num_cpus: int = 1
    resources: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


def require_private_netns() -> None:
    names = sorted(name for _, name in socket.if_nameindex())
    if names != ["lo"]:
        raise RuntimeError(f"Ray tests must run in a private network namespace with only loopback (this one has "
                           f"{', '.join(names)}): run `bash scripts/test_ray.sh`")


class LocalRayCluster:
    CLIENT_PORT = 10001  # Ray Client server on the head (ray://127.0.0.1:10001); free in a private namespace

    def __init__(self, head: NodeSpec, workers: list[NodeSpec]) -> None:
        require_private_netns()
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        from ray.cluster_utils import Cluster

        self.specs = {s.name: s for s in (head, *workers)}
        self.head_name = head.name
        self._nodes: dict[str, Any] = {}
        self._ids: dict[str, str] = {}
        self._cluster = Cluster(initialize_head=True, head_node_args={
            **self._args(head), "include_dashboard": False, "ray_client_server_port": self.CLIENT_PORT})
        self._track(head.name, self._cluster.head_node)
        for w in workers:
            self._track(w.name, self._cluster.add_node(**self._args(w)))
        self._cluster.wait_for_nodes()

    @staticmethod
    def _args(spec: NodeSpec) -> dict[str, Any]:
        return {"num_cpus": spec.num_cpus, "resources": dict(spec.resources), "labels": dict(spec.labels),
                "object_store_memory": OBJECT_STORE_BYTES, "node_ip_address": "127.0.0.1"}

    def _track(self, name: str, node: Any) -> None:
        self._nodes[name] = node
        self._ids[node.node_id] = name

    @property
    def address(self) -> str:
        return str(self._cluster.address)

    @property
    def client_address(self) -> str:
        return f"ray://127.0.0.1:{self.CLIENT_PORT}"

    def node_id(self, name: str) -> str:
        return str(self._nodes[name].node_id)

    def name_of(self, node_id: str) -> str:
        """The spec name of a node, by its full or shortened hex id."""
        return next(name for nid, name in self._ids.items() if nid.startswith(node_id))

    def kill(self, name: str) -> None:
        """SIGKILL every process of a worker node, as when its machine dies."""
        assert name != self.head_name, "killing the head ends the cluster"
        self._cluster.remove_node(self._nodes.pop(name), allow_graceful=False)

    def restart(self, name: str) -> None:
        """Bring a killed worker node back (a new node id, the same resources and labels)."""
        self.add(self.specs[name])

    def add(self, spec: NodeSpec) -> None:
        """Add a worker node, as an autoscaler would; `kill(spec.name)` removes it again."""
        self.specs[spec.name] = spec
        self._track(spec.name, self._cluster.add_node(**self._args(spec)))
        self._cluster.wait_for_nodes()

    def alive(self) -> list[str]:
        return sorted(self._nodes)

    def shutdown(self) -> None:
        self._cluster.shutdown()
        time.sleep(0.5)  # let the raylets' children exit before another cluster starts
