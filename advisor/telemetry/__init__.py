"""Telemetry sampled during a run, in one background thread at a fixed interval.

Composes the samplers that apply here: the engine process (psutil, always),
the GPU (pynvml, only when a GPU is present: otherwise "n/a", never a guess),
the server's Prometheus endpoint (when the adapter exposes `metrics_url`) and
the adapter's own engine gauges (`Adapter.stats()`). Without a generation adapter (an embedding engine, which
has neither gauges nor an endpoint) only the process and the GPU are sampled.
"""

from __future__ import annotations

import threading
import time
from statistics import median
from typing import TYPE_CHECKING, Any

from advisor.telemetry.process import ProcessSampler
from advisor.telemetry.record import TelemetrySummary

if TYPE_CHECKING:
    from adapters.base import Adapter


class Telemetry:
    def __init__(self, adapter: Adapter | None, pid: int | None, interval_s: float = 1.0) -> None:
        self.adapter = adapter
        self.interval_s = interval_s
        # pid None: the engine runs elsewhere (a server at a URL); its memory is not ours to read
        self.process = ProcessSampler(pid) if pid is not None else None
        self.gpu = _gpu_sampler()
        self.prom = _prom_sampler(adapter.info.extra.get("metrics_url") if adapter is not None and adapter.started
                                  else None)
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="advisor-telemetry", daemon=True)
        self.t0_ns = 0

    def start(self, t0_ns: int) -> None:
        self.t0_ns = t0_ns
        if self.gpu is not None:
            self.gpu.t0_ns = t0_ns  # one clock for GPU samples and the summary window
        self._tick()  # a first sample (and server snapshot) before any request goes out
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self._tick()  # one last sample at the end

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._tick()

    def _tick(self) -> None:
        s: dict[str, Any] = {"t_s": (time.perf_counter_ns() - self.t0_ns) / 1e9}
        if self.process is not None:
            s.update(self.process.sample())
        if self.gpu is not None:
            s.update({f"gpu_{k}": v for k, v in self.gpu.sample().items()})
        try:
            stats = self.adapter.stats() if self.adapter is not None else {}
            s.update({f"engine_{k}": float(v) for k, v in (stats or {}).items()})
        except Exception as e:  # a gauge that cannot be read is noted, not fatal
            s["engine_stats_error"] = f"{type(e).__name__}: {e}"
        if self.prom is not None:
            s.update({f"server_{k}": v for k, v in self.prom.sample().items()})
        self.samples.append(s)

    def summary(self, window_s: tuple[float, float] | None, n_output_tokens: int | None) -> TelemetrySummary:
        """Peak/steady memory, mean CPU, GPU energy per token, engine-gauge peaks; JSON-safe."""
        inside = [s for s in self.samples if window_s is None or window_s[0] <= s["t_s"] <= window_s[1]] or self.samples
        rss = [s["rss_mb"] for s in inside if "rss_mb" in s]
        cpu = [s["cpu_percent"] for s in inside if "cpu_percent" in s]
        engine_peaks: dict[str, float] = {}
        for s in self.samples:
            for k, v in s.items():
                if k.startswith(("engine_", "server_")) and isinstance(v, float):
                    engine_peaks[k + "_peak"] = max(v, engine_peaks.get(k + "_peak", v))
        gpu = None
        if self.gpu is not None:
            gpu = self.gpu.summary(n_output_tokens, window_s)
        kernel_peak = self.process.peak_rss_mb() if self.process is not None else None
        return TelemetrySummary(
            interval_s=self.interval_s,
            pid=self.process.pid if self.process is not None else None,
            rss_absent_reason=None if self.process is not None else "the engine is a remote server: no local process",
            rss_peak_mb=max([*rss, kernel_peak or 0.0]) or None,
            rss_steady_mb=median(rss) if rss else None,
            cpu_percent_mean=sum(cpu) / len(cpu) if cpu else None,
            gpu=gpu,
            gpu_absent_reason=self.gpu_absent_reason,
            engine_stats=engine_peaks,
            server_metrics=self.prom.snapshots() if self.prom is not None and hasattr(self.prom, "snapshots") else None,
            samples=self.samples,
        )

    @property
    def gpu_absent_reason(self) -> str | None:
        return _gpu_probe() if self.gpu is None else None


def _gpu_probe() -> str | None:
    try:
        from advisor.telemetry.gpu import GpuSampler
    except ImportError as e:
        return f"GPU telemetry unavailable ({e})"
    return GpuSampler.probe()


def _gpu_sampler() -> Any:
    if _gpu_probe() is not None:
        return None
    from advisor.telemetry.gpu import GpuSampler, visible_device_index

    return GpuSampler(visible_device_index())


def _prom_sampler(url: str | None) -> Any:
    if not url:
        return None
    from advisor.telemetry.prometheus import PrometheusSampler

    return PrometheusSampler(url)
