"""Prometheus sampler: each server's names map onto our keys; run deltas come from the server itself."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("prometheus_client")

import adapters
from adapters.base import RequestSpec  # noqa: E402
from adapters.openai import OpenAIAdapter  # noqa: E402
from advisor.telemetry.prometheus import (  # noqa: E402
    PrometheusSampler,
    histogram_mean,
    map_gauges,
    metrics_url,
    parse_metrics,
)
from tests.servers.mock_openai import MockOpenAIServer, free_port  # noqa: E402

SGLANG = """# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 3
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 2
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.5
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="m"} 0.25
"""
TRTLLM = """# TYPE trtllm_num_requests_running gauge
trtllm_num_requests_running{model_name="m",engine_type="trtllm"} 4
# TYPE trtllm_num_requests_waiting gauge
trtllm_num_requests_waiting{model_name="m",engine_type="trtllm"} 1
# TYPE trtllm_kv_cache_utilization gauge
trtllm_kv_cache_utilization{model_name="m",engine_type="trtllm"} 0.75
# TYPE trtllm_time_to_first_token_seconds histogram
trtllm_time_to_first_token_seconds_bucket{le="0.1",model_name="m",engine_type="trtllm"} 1
trtllm_time_to_first_token_seconds_bucket{le="+Inf",model_name="m",engine_type="trtllm"} 2
trtllm_time_to_first_token_seconds_count{model_name="m",engine_type="trtllm"} 2
trtllm_time_to_first_token_seconds_sum{model_name="m",engine_type="trtllm"} 0.3
"""


@pytest.mark.parametrize(("text", "expected"), [
    (SGLANG, {"running": 3, "waiting": 2, "kv_cache_usage": 0.5, "prefix_cache_hit_rate": 0.25}),
    (TRTLLM, {"running": 4, "waiting": 1, "kv_cache_usage": 0.75}),
])
def test_each_servers_names_map_onto_our_keys(text, expected):
    assert map_gauges(parse_metrics(text)) == expected


def test_series_are_summed_over_labels_but_buckets_kept_apart():
    flat = parse_metrics(TRTLLM + 'trtllm_num_requests_running{model_name="other",engine_type="trtllm"} 2\n')
    assert flat["trtllm_num_requests_running"] == 6
    assert flat['trtllm_time_to_first_token_seconds_bucket{le="0.1"}'] == 1


def test_sampler_reads_a_live_server_and_reports_run_deltas():
    with MockOpenAIServer() as srv:
        adapter = adapters.create("openai", "mock-model", url=srv.url)
        adapter.start()  # its warm-up requests come before the sampler's first snapshot
        assert isinstance(adapter, OpenAIAdapter) and adapter.metrics_url == srv.url + "/metrics"
        prom = PrometheusSampler(srv.url)
        first = prom.sample()
        assert first == {"running": 0, "waiting": 0, "kv_cache_usage": 0.0}

        async def go() -> None:
            for i in range(3):
                req = RequestSpec(request_id=str(i), prompt_ids=(1, 2), max_tokens=5)
                [c async for c in adapter.stream(req)]
            await adapter.aclose()
        asyncio.run(go())
        last = prom.sample()
    assert last["prefix_cache_hit_rate"] == 0.5
    snap = prom.snapshots()
    assert snap["delta"]["vllm:generation_tokens_total"] == 15
    assert snap["delta"]["vllm:request_generation_tokens_count"] == 3
    assert histogram_mean(snap, "vllm:request_generation_tokens") == 5
    assert prom.summary()["running_max"] == 0


def test_unreachable_endpoint_counts_errors_without_raising():
    prom = PrometheusSampler(f"http://127.0.0.1:{free_port()}", timeout_s=0.5)
    assert prom.sample() == {} and prom.errors == 1 and prom.last_error
    assert prom.snapshots()["delta"] == {}


def test_metrics_url():
    assert metrics_url("http://h:8000/") == "http://h:8000/metrics"
    assert metrics_url("http://h:8000/prometheus/metrics") == "http://h:8000/prometheus/metrics"
