"""Served embedding engines on one model: vLLM (`--runner pooling`) against infinity-emb, through `advisor embed
--engine openai-embed` on the embed-query scenario's small-machine fit.

Each server is started alone (they would share the 2 cores otherwise) on a loopback port, checked with one
request, then measured --runs times with the same bounded run (`advisor embed --scenario embed-query
--max-requests N`, the client's tokenizer counting tokens, so tokens/s is comparable: infinity's usage counts
characters); the servers take turns run by run when --alternate is given (both up, the idle one waits), else
one after the other. infinity-emb runs torch on --infinity-threads threads (default 1, as vLLM's CPU server
runs its own: it keeps the other core for serving). Per run: the verdict, latency p50/p95, req/s, tokens/s
and the 1-minute load average before and after; per engine the medians over runs and the ratio of the
medians. The client runs on the same machine as the server: on 2 cores the figures are the pair's, not the
server's alone.

    python benchmarks/embed_servers.py --model ~/.advisor/models/minilm --vllm-python .venv-vllm/bin/python \\
        --infinity .venv-infinity/bin/infinity_emb --runs 3 --max-requests 120
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.launch import ManagedServer  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(engine: str, a: argparse.Namespace, port: int) -> str:
    if engine == "vllm":
        return (f"VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 {a.vllm_python} -m vllm.entrypoints.openai.api_server "
                f"--model {a.model} --served-model-name minilm --runner pooling --dtype float32 "
                f"--host 127.0.0.1 --port {port}")
    threads = f"OMP_NUM_THREADS={a.infinity_threads} " if a.infinity_threads else ""
    return (f"{threads}INFINITY_ANONYMOUS_USAGE_STATS=0 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 {a.infinity} v2 "
            f"--model-id {a.model} "
            f"--served-model-name minilm --engine torch --device cpu --host 127.0.0.1 --port {port} "
            "--url-prefix /v1 --no-bettertransformer")


def _run(url: str, a: argparse.Namespace) -> dict:
    """One bounded `advisor embed` run against `url`, in a fresh folder: its result.json summary."""
    with tempfile.TemporaryDirectory(prefix="embed-servers-") as d:
        load0 = os.getloadavg()[0]
        p = subprocess.run([sys.executable, "-m", "advisor_cli", "embed", "--scenario", "embed-query", "--engine",
                            "openai-embed", "--url", url, "--opt", f"tokenizer={a.model}", "--max-requests",
                            str(a.max_requests), "--seed", "0"], cwd=d, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "ADVISOR_HOME": d, "PYTHONPATH": str(ROOT)})
        if p.returncode != 0:
            raise SystemExit(f"advisor embed failed against {url}:\n{p.stderr[-2000:]}")
        [result] = list(Path(d, "runs-embed").glob("*/result.json"))
        doc = json.loads(result.read_text())
    s = doc["summary"]
    return {"verdict": s["verdict"], "n_ok": s["n_ok"], "n_requests": s["n_requests"],
            "p50_ms": round(s["latency_ms"]["p50"], 2), "p95_ms": round(s["latency_ms"]["p95"], 2),
            "requests_per_s": round(s["requests_per_s"], 2), "tokens_per_s": round(s["tokens_per_s"], 1),
            "late_sends": s["late_sends"], "loadavg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="the sentence-transformers model's folder (advisor models create)")
    ap.add_argument("--vllm-python", required=True, help="python of a venv with vllm-cpu")
    ap.add_argument("--infinity", default=shutil.which("infinity_emb"), help="infinity_emb executable")
    ap.add_argument("--infinity-threads", type=int, default=1,
                    help="torch threads of infinity-emb (OMP_NUM_THREADS; 0: torch's default, one per core). 1 by "
                         "default: vLLM's CPU server keeps one core for itself and runs torch on 1 thread")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-requests", type=int, default=120)
    ap.add_argument("--alternate", action="store_true", help="both servers up, runs alternate engine by engine")
    a = ap.parse_args()
    a.model = str(Path(a.model).expanduser().resolve())
    engines = ["vllm"] + (["infinity"] if a.infinity else [])
    runs: dict[str, list[dict]] = {e: [] for e in engines}
    logs = Path(tempfile.mkdtemp(prefix="embed-servers-logs-"))

    def up(engine: str) -> tuple[ManagedServer, str]:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = ManagedServer(_command(engine, a, port), health_urls=[url + "/v1/models"],
                               log_path=logs / f"{engine}.log", health_timeout_s=600)
        server.start()
        req = urllib.request.Request(url + "/v1/embeddings", data=json.dumps(
            {"model": "minilm", "input": ["a check"], "encoding_format": "float"}).encode(),
            headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=60).read()
        return server, url

    if a.alternate:
        servers = {e: up(e) for e in engines}
        for i in range(a.runs):
            for e in engines:
                runs[e].append(_run(servers[e][1], a))
                print(json.dumps({"engine": e, "run": i, **runs[e][-1]}), flush=True)
        for server, _ in servers.values():
            server.close()
    else:
        for e in engines:
            server, url = up(e)
            try:
                for i in range(a.runs):
                    runs[e].append(_run(url, a))
                    print(json.dumps({"engine": e, "run": i, **runs[e][-1]}), flush=True)
            finally:
                server.close()
    med = {e: {k: statistics.median(r[k] for r in rs) for k in ("p50_ms", "p95_ms", "requests_per_s", "tokens_per_s")}
           for e, rs in runs.items()}
    out: dict = {"medians": med, "runs": a.runs, "max_requests": a.max_requests, "alternate": a.alternate,
                 "infinity_threads": a.infinity_threads or "default",
                 "cpus": len(os.sched_getaffinity(0)), "loadavg": [round(x, 2) for x in os.getloadavg()],
                 "logs": str(logs)}
    if "infinity" in med:
        out["vllm_over_infinity_p50"] = round(med["vllm"]["p50_ms"] / med["infinity"]["p50_ms"], 3)
        out["vllm_over_infinity_p95"] = round(med["vllm"]["p95_ms"] / med["infinity"]["p95_ms"], 3)
    print(json.dumps({"summary": out}), flush=True)


if __name__ == "__main__":
    main()
