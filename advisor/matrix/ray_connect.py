"""Ray connection, in one place: import ray, check an address, join a cluster (or start one), ship this checkout.

Used by the matrix (`advisor matrix --ray`, `advisor.matrix.run`) and by the load generator's Ray workers
(`--workers ray:N`, `advisor.loadgen.ray_workers`); it imports neither. An address is `HOST:PORT`, `ray://HOST[:PORT]`
or `auto` (RAY_ADDRESS, a cluster running here, else a new one). An unreachable address is one line at once: the host
and port are tried with a plain TCP connection (3 s) before `ray.init`, which would otherwise retry for minutes.
Without the `ray` extra, the flag that needed Ray says what to install. `--ship-code` sends this checkout's packages
to the workers (Ray's `py_modules`), for clusters whose nodes have advisor's dependencies but not advisor itself.
What runs on Ray stays with its user: `advisor.matrix.ray_runner`/`ray_task`, `advisor.loadgen.ray_actor`.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

INSTALL_HINT = "pip install 'inference-advisor[ray]' (in a checkout: pip install -e '.[ray]')"
_PACKAGES = ("advisor", "adapters", "scenarios", "own_engine", "model_cache", "build_info", "reports")


class RayConnectError(RuntimeError):
    """No usable Ray cluster; the message says what to check or install."""


def import_ray(needed_by: str = "--ray") -> ModuleType:
    """The ray module; without it, one line: `needed_by` (the flag or setting that asked) needs Ray, and how to install it."""
    try:
        import ray
    except ImportError:
        raise RayConnectError(f"{needed_by} needs Ray, which is not installed: {INSTALL_HINT}") from None
    return ray


def split_address(address: str) -> tuple[str, int]:
    """(host, port) of `HOST:PORT` or `ray://HOST[:PORT]` (Ray's defaults: 6379, client 10001)."""
    client = address.startswith("ray://")
    rest = address.removeprefix("ray://").rstrip("/")
    host, sep, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    if not sep:
        host, port = rest, "10001" if client else "6379"
    if not host or not port.isdigit():
        raise RayConnectError(f"--ray {address!r} is not a Ray address: give HOST:PORT (the head's GCS, e.g. "
                              "10.0.0.5:6379), ray://HOST:10001 (Ray Client) or auto")
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout_s: float = 3.0) -> None:
    host, port = split_address(address)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise RayConnectError(f"cannot reach a Ray cluster at {address} ({why}); check the address (`ray status` on "
                              f"the head prints it) and that this machine can reach {host}:{port}") from None


def connect(address: str, say: Callable[[str], None], ship_code: bool = False, purpose: str = "the matrix") -> ModuleType:
    """`ray.init` for the matrix (or `purpose`); returns the ray module. Says which cluster it joined or started."""
    ray = import_ray()
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False, "namespace": "advisor"}
    if ship_code:
        from build_info import SHIPPED_VERSION_ENV, __version__

        # the shipped copy has no .git, so it is told which version it is: the driver's, which it is, byte for byte
        kwargs["runtime_env"] = {"py_modules": [_package_dir(p) for p in _PACKAGES],
                                 "env_vars": {SHIPPED_VERSION_ENV: __version__}}
    if address != "auto":
        check_reachable(address)
        _init(ray, address, kwargs, say)
        say(f"connected to the Ray cluster at {address}")
        return ray
    env = os.environ.get("RAY_ADDRESS")
    if env:
        check_reachable(env)
        _init(ray, env, kwargs, say)
        say(f"connected to the Ray cluster at {env} (RAY_ADDRESS)")
        return ray
    try:
        ray.init(address="auto", **kwargs)
        say("connected to the Ray cluster running on this machine")
    except ConnectionError:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a cluster we start ourselves sends nothing out
        ray.init(include_dashboard=False, **kwargs)
        cpus = ray.cluster_resources().get("CPU", 0)
        say(f"no Ray cluster in RAY_ADDRESS or running here: started a local one ({cpus:g} CPUs); "
            f"it stops when {purpose} ends")
    return ray


def _init(ray: ModuleType, address: str, kwargs: dict[str, Any], say: Callable[[str], None]) -> None:
    """`ray.init`, with one more try for Ray Client, whose per-driver server sometimes fails its first start."""
    tries = 2 if address.startswith("ray://") else 1
    for attempt in range(1, tries + 1):
        try:
            ray.init(address=address, **kwargs)
            return
        except Exception as e:  # Ray raises ConnectionError, RuntimeError or its own errors: all end here
            lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
            first = lines[-1] if "Traceback" in str(e) else lines[0]  # a server's traceback: its last line says why
            if attempt < tries and "client server" in str(e).lower():
                say(f"Ray Client at {address} could not start a session ({first}); trying once more")
                time.sleep(2.0)
                continue
            raise RayConnectError(f"could not connect to the Ray cluster at {address}: {first}") from None


def _package_dir(name: str) -> str:
    import importlib

    return str(Path(importlib.import_module(name).__file__ or "").parent)
