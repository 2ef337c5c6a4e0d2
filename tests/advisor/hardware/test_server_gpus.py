"""A served engine's hardware read from the server host's DCGM exporter /metrics (issue 26, item 5)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import click
import pytest

from advisor.catalog import load_catalog
from advisor.hardware.server_gpus import parse_dcgm
from advisor.recommend import Constraints, recommend
from advisor_cli.options import bench_config
from tests.advisor.recommend.runs import loaded, make_run


def dcgm_text(model: str, n: int) -> str:
    lines = ["# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).", "# TYPE DCGM_FI_DEV_FB_FREE gauge",
             "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).", "# TYPE DCGM_FI_DEV_FB_USED gauge",
             "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for i in range(n):
        lab = f'gpu="{i}",UUID="GPU-{i:04d}",device="nvidia{i}",modelName="{model}",Hostname="vm"'
        lines += [f"DCGM_FI_DEV_FB_FREE{{{lab}}} 80000", f"DCGM_FI_DEV_FB_USED{{{lab}}} 1000",
                  f"DCGM_FI_DEV_GPU_UTIL{{{lab}}} 42"]
    return "\n".join(lines) + "\n"


@pytest.fixture
def serve() -> Iterator:
    """serve(text) -> a 127.0.0.1 URL answering GET with `text`."""
    servers = []

    def start(text: str) -> str:
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                body = text.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/metrics"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def _cfg(url: str):
    return bench_config(scenario="chat", engine="openai", model=None, opts=(), threads=None, device=None,
                        url="http://127.0.0.1:9", launch=None, out_dir=".", timeout_s=10.0, server_metrics=url)


def test_dcgm_names_the_servers_gpus_and_the_run_is_priced_on_them(serve):
    url = serve(dcgm_text("NVIDIA H100 80GB HBM3", 4))
    gpus = parse_dcgm(dcgm_text("NVIDIA H100 80GB HBM3", 4))
    assert [g.uuid for g in gpus] == ["GPU-0000", "GPU-0001", "GPU-0002", "GPU-0003"]
    assert gpus[0].memory_gb == pytest.approx(81000 * 2**20 / 1e9)
    decl = _cfg(url).server_hardware
    assert decl["id"] == "h100-sxm" and decl["count"] == 4 and url in decl["declared_by"]
    run = make_run("served-dcgm", engine="openai", rps=4.0, ttft_ms=300, tpot_ms=40, precision="unknown")
    run["engine"]["format"] = "server"
    run["manifest"]["server_hardware"] = decl
    rec = recommend(loaded([run]), Constraints(peak_rps=20), load_catalog())
    assert rec.rows[0].candidate.hardware_id == "h100-sxm" and rec.rows[0].candidate.devices == 4
    assert any("DCGM exporter" in n for n in rec.notes)


def test_an_unlisted_gpu_from_dcgm_is_unknown_hardware_and_says_so(serve):
    decl = _cfg(serve(dcgm_text("NVIDIA Imaginary 9000", 2))).server_hardware
    assert decl["id"] is None and decl["gpu_names"] == ["NVIDIA Imaginary 9000"]
    run = make_run("served-x", engine="openai", precision="unknown")
    run["engine"]["format"] = "server"
    run["manifest"]["server_hardware"] = decl
    rec = recommend(loaded([run]), Constraints(peak_rps=20), load_catalog())
    assert rec.rows[0].monthly_usd is None and rec.best is None
    assert any("Imaginary 9000" in n and "not in the hardware catalog" in n for n in rec.notes)


def test_node_exporter_or_a_dead_url_is_a_clear_usage_error(serve):
    node = serve("# TYPE node_load1 gauge\nnode_load1 0.5\n")
    with pytest.raises(click.UsageError, match="no GPU with a modelName label"):
        _cfg(node)
    with pytest.raises(click.UsageError, match="could not read it"):
        _cfg("http://127.0.0.1:9/metrics")
