"""Server-side telemetry from a Prometheus `/metrics` endpoint (vLLM, SGLang, TGI, trtllm-serve, llama.cpp).

`PrometheusSampler(url).sample()` scrapes once and maps each server's metric
names onto our keys (`running`, `waiting`, `kv_cache_usage` as a 0-1 fraction,
`prefix_cache_hit_rate`); the first scrape and the latest one are kept whole
for histograms and token counters, so `snapshots()["delta"]` holds what the
server itself measured during the run (TTFT/E2E histogram sums and counts,
prompt and generation token totals) to compare with the client's figures.
Parsing is `prometheus_client`'s (the `prometheus` extra); no thread here.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

# our key -> the series each server uses for it (first one present wins); see docs/servers.md
GAUGES: dict[str, tuple[str, ...]] = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs", "tgi_batch_current_size",
                "trtllm_num_requests_running", "llamacpp:requests_processing"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "tgi_queue_size",
                "trtllm_num_requests_waiting", "llamacpp:requests_deferred"),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage",
                       "trtllm_kv_cache_utilization", "llamacpp:kv_cache_usage_ratio"),
    "prefix_cache_hit_rate": ("sglang:cache_hit_rate", "trtllm_kv_cache_hit_rate"),
}
# (hits, queries) counters from which a hit rate over the run is derived
HIT_COUNTERS = (("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"),
                ("vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"))
SERVER_PREFIXES = ("vllm:", "sglang:", "tgi_", "trtllm_", "llamacpp:")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {series name (with `le` for buckets): value summed over all other labels}."""
    from prometheus_client.parser import text_string_to_metric_families

    flat: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = f'{s.name}{{le="{s.labels["le"]}"}}' if s.name.endswith("_bucket") and "le" in s.labels else s.name
            flat[key] = flat.get(key, 0.0) + float(s.value)
    return flat


def metrics_url(url: str) -> str:
    """A server root becomes `<root>/metrics`; a URL that already names the endpoint is kept."""
    url = url.rstrip("/")
    return url if url.endswith("metrics") else url + "/metrics"


class PrometheusSampler:
    """Scrapes one endpoint on each `sample()`; keeps the first and latest full scrapes."""

    def __init__(self, url: str, timeout_s: float = 2.0) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.url = metrics_url(url)
        self.timeout_s = timeout_s
        self.first: dict[str, float] | None = None
        self.last: dict[str, float] | None = None
        self.series: list[dict[str, float]] = []  # mapped values of every successful scrape
        self.errors = 0
        self.last_error: str | None = None

    def scrape(self) -> dict[str, float]:
        """One GET of the endpoint, parsed (raises OSError/ValueError when it fails)."""
        with urllib.request.urlopen(self.url, timeout=self.timeout_s) as resp:
            text = resp.read().decode("utf-8", errors="replace")
        return parse_metrics(text)

    def sample(self) -> dict[str, float]:
        """Our keys present on this server; {} when the scrape failed (counted in `errors`)."""
        try:
            flat = self.scrape()
        except (urllib.error.URLError, OSError, ValueError) as e:
            self.errors += 1
            self.last_error = f"{type(e).__name__}: {e}"
            return {}
        if self.first is None:
            self.first = flat
        self.last = flat
        values = map_gauges(flat)
        rate = _hit_rate(self.first, flat)
        if rate is not None:
            values["prefix_cache_hit_rate"] = rate
        self.series.append(values)
        return values

    def snapshots(self) -> dict[str, Any]:
        """Server-side histograms and counters at the first and latest scrape, and their difference."""
        start = _server_series(self.first or {})
        end = _server_series(self.last or {})
        delta = {k: end[k] - start.get(k, 0.0) for k in end}
        return {"url": self.url, "start": start, "end": end, "delta": delta, "scrape_errors": self.errors}

    def summary(self) -> dict[str, Any]:
        """Mean and max of each mapped gauge over the run, plus the snapshots."""
        out: dict[str, Any] = {}
        for key in GAUGES:
            vals = [s[key] for s in self.series if key in s]
            out[f"{key}_mean"] = sum(vals) / len(vals) if vals else None
            out[f"{key}_max"] = max(vals) if vals else None
        out["n_scrapes"] = len(self.series)
        out["server_metrics"] = self.snapshots()
        return out


def map_gauges(flat: dict[str, float]) -> dict[str, float]:
    """The first series present for each of our keys."""
    values: dict[str, float] = {}
    for key, names in GAUGES.items():
        for name in names:
            if name in flat:
                values[key] = flat[name]
                break
    return values


def histogram_mean(snapshots: dict[str, Any], family: str) -> float | None:
    """Mean of a server histogram over the run (delta sum / delta count), e.g. 'vllm:time_to_first_token_seconds'."""
    delta = snapshots["delta"]
    n = delta.get(f"{family}_count", 0.0)
    return delta[f"{family}_sum"] / n if n else None


def _hit_rate(first: dict[str, float], now: dict[str, float]) -> float | None:
    for hits, queries in HIT_COUNTERS:
        if hits in now and queries in now:
            dq = now[queries] - first.get(queries, 0.0)
            return (now[hits] - first.get(hits, 0.0)) / dq if dq > 0 else None
    return None


def _server_series(flat: dict[str, float]) -> dict[str, float]:
    """Counters and histogram series of known servers (gauges are in the sampled series)."""
    return {k: v for k, v in flat.items() if k.startswith(SERVER_PREFIXES)
            and (k.endswith(("_total", "_count", "_sum")) or "_bucket{" in k)}
