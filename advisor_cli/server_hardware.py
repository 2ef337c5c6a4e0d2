"""`--server-hardware ID [--server-hardware-count N] [--server-where TEXT]`: the hardware behind a served engine.

A run of `--engine openai` (with `--url` or `--launch`) measures the server, not the machine advisor
runs on; the declaration is recorded in the run's manifest as `server_hardware` and is what
`advisor recommend` sizes and prices such a run on. Without it the run is on "unknown hardware".
"""

from __future__ import annotations

from typing import Any

import click

import adapters


def _served(engine: str) -> bool:
    caps = adapters.capabilities(engine)
    return caps is not None and caps.served


def _served_names() -> str:
    return ", ".join(n for n in adapters.REGISTRY if _served(n))

server_hardware_flags = [
    click.option("--server-hardware", "server_hardware", default=None, metavar="ID",
                 help="Catalog id of the hardware that serves the requests (openai engine; `advisor hardware` "
                      "lists ids). Without it a served run sizes and prices nothing."),
    click.option("--server-hardware-count", "server_hardware_count", type=click.IntRange(min=1), default=1,
                 show_default=True, help="Devices of --server-hardware per server replica."),
    click.option("--server-where", "server_where", default=None, metavar="TEXT",
                 help="Where the server runs, in words (recorded with --server-hardware), e.g. 'aws us-east-1'."),
    click.option("--server-metrics", "server_metrics", default=None, metavar="URL",
                 help="The server host's DCGM exporter /metrics URL: its GPUs (model, count) are read once and "
                      "recorded as the server hardware (instead of --server-hardware)."),
]


def server_hardware_from(engine: str, hardware_id: str | None, count: int, where: str | None,
                         metrics_url: str | None = None) -> dict[str, Any] | None:
    """The manifest's `server_hardware` for these flags (None without them); a bad flag is a usage error."""
    if metrics_url is not None:
        return _from_metrics(engine, hardware_id, metrics_url)
    if hardware_id is None:
        if count != 1 or where:
            raise click.UsageError("--server-hardware-count and --server-where need --server-hardware ID")
        return None
    if not _served(engine):
        raise click.UsageError(f"--server-hardware is for a served engine ({_served_names()}); "
                               f"--engine {engine} runs here, and its run records this machine itself")
    from advisor.catalog import load_catalog

    known = sorted(load_catalog().hardware)
    if hardware_id not in known:
        raise click.UsageError(f"unknown --server-hardware {hardware_id!r}; valid ids: {', '.join(known)}")
    return {"id": hardware_id, "count": count, "where": where, "declared_by": "--server-hardware"}


def _from_metrics(engine: str, hardware_id: str | None, url: str) -> dict[str, Any]:
    from advisor.catalog import load_catalog
    from advisor.hardware.server_gpus import ServerGpusError, read_server_gpus, server_hardware_from_gpus

    if hardware_id is not None:
        raise click.UsageError("--server-metrics and --server-hardware both name the server's hardware: give one")
    if not _served(engine):
        raise click.UsageError(f"--server-metrics is for a served engine ({_served_names()})")
    try:
        return server_hardware_from_gpus(read_server_gpus(url), url, load_catalog())
    except ServerGpusError as e:
        raise click.UsageError(str(e)) from None
