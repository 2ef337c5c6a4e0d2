"""The adapter contract, one suite for every adapter that can run here.

Each adapter gets the same checks: a sane EngineInfo from start(), exactly
`max_tokens` output tokens delivered one chunk per token with ordered
timestamps, 8 overlapping requests that all complete (and really overlap for
engines that say they batch, and really queue for those that say they don't),
an over-long request refused with an AdapterError instead of a hang, and a
clean close(). Engine adapters run in the `engines` group and skip with the
reason when their package is missing.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

import adapters
from adapters.base import AdapterError, Chunk, EngineInfo, RequestSpec
from adapters.fake import FakeAdapter
from tests.adapters.formats.models import tiny_model

ENGINE_OPTIONS: dict[str, dict] = {
    "fake": {"tpot_ms": 1.0},
    "own": {"device": "cpu"},
    "own-static": {"device": "cpu"},
    "transformers": {"device": "cpu", "max_batch": 8},
    "llama_cpp": {"max_batch": 8},
    "onnxruntime": {"max_batch": 8, "max_length": 1024},
    "openvino": {"max_batch": 8},
}
ENGINES = {"llama_cpp", "onnxruntime", "openvino"}
N_OUT = 12


def _param(name: str):
    marks = [pytest.mark.engines] if name in ENGINES else []
    return pytest.param(name, marks=marks, id=name)


@pytest.fixture(scope="module", params=[_param(n) for n in ENGINE_OPTIONS])
def started(request):
    name = request.param
    why = adapters.why_unavailable(name)
    if why:
        pytest.skip(f"{name}: {why}")
    model = None if name == "fake" else str(tiny_model())
    adapter = adapters.create(name, model, **ENGINE_OPTIONS[name])
    info = adapter.start()
    yield adapter, info
    adapter.close()


def _prompt(i: int, n: int = 10, vocab: int | None = None) -> tuple[int, ...]:
    v = vocab or 2048
    return tuple(3 + (i * 31 + j * 7) % (v - 3) for j in range(n))


async def _collect(adapter, req: RequestSpec) -> list[Chunk]:
    return [c async for c in adapter.stream(req)]


def test_start_reports_what_is_measured(started):
    adapter, info = started
    assert isinstance(info, EngineInfo)
    assert info.adapter == adapter.name
    assert info.engine and info.version and info.device and info.format and info.precision
    assert info.batching in ("continuous", "static", "none")
    if info.batching == "none":
        assert info.notes, "an engine that cannot batch must say so in EngineInfo.notes"
    if adapter.name != "fake":
        assert info.vocab_size and info.vocab_size > 0
        assert info.max_model_len and info.max_model_len > N_OUT
        assert info.threads and info.threads >= 1


def test_exact_output_length_one_chunk_per_token(started):
    adapter, info = started
    req = RequestSpec("exact", _prompt(0, vocab=info.vocab_size), max_tokens=N_OUT)
    chunks = asyncio.run(_collect(adapter, req))
    assert sum(c.n_tokens for c in chunks) == N_OUT
    assert len(chunks) == N_OUT and all(c.n_tokens == 1 for c in chunks)
    assert all(a.t_ns <= b.t_ns for a, b in zip(chunks, chunks[1:], strict=False))
    assert isinstance(adapter.stats(), dict)


def test_eight_overlapping_requests_complete_and_are_served_as_claimed(started):
    adapter, info = started

    async def go() -> list[list[Chunk]]:
        reqs = [RequestSpec(f"c{i}", _prompt(i, 8 + i, info.vocab_size), max_tokens=N_OUT) for i in range(8)]
        return await asyncio.wait_for(asyncio.gather(*[_collect(adapter, r) for r in reqs]), timeout=120)

    results = asyncio.run(go())
    assert [sum(c.n_tokens for c in r) for r in results] == [N_OUT] * 8
    def t(c: Chunk) -> int:  # the engine's order of work: its own stamps where it gives them
        return c.t_engine_ns if c.t_engine_ns is not None else c.t_ns

    spans = sorted((t(r[0]), t(r[-1])) for r in results)
    overlapping = sum(1 for a, b in zip(spans, spans[1:], strict=False) if b[0] < a[1])
    if info.batching in ("continuous", "static"):
        assert overlapping >= 1, "an engine that batches must serve overlapping requests together"
    else:
        assert overlapping == 0, "batching='none' but requests overlapped: EngineInfo would mislead"


def test_over_long_request_is_refused_not_hung(started):
    adapter, info = started
    if info.max_model_len is None:
        pytest.skip(f"{adapter.name} has no context limit to exceed")
    req = RequestSpec("too-long", _prompt(1, 16, info.vocab_size), max_tokens=info.max_model_len + 1)

    async def go() -> None:
        await asyncio.wait_for(_collect(adapter, req), timeout=60)

    with pytest.raises(AdapterError) as err:
        asyncio.run(go())
    assert err.value.kind == "refused"


def test_still_serves_after_a_refusal_and_closes_cleanly(started):
    adapter, info = started
    req = RequestSpec("after", _prompt(2, vocab=info.vocab_size), max_tokens=3)
    assert sum(c.n_tokens for c in asyncio.run(_collect(adapter, req))) == 3


@pytest.mark.parametrize("name", [_param(n) for n in ENGINE_OPTIONS])
def test_close_is_idempotent_and_stops_serving(name):
    why = adapters.why_unavailable(name)
    if why:
        pytest.skip(f"{name}: {why}")
    adapter = adapters.create(name, None if name == "fake" else str(tiny_model()), **ENGINE_OPTIONS[name])
    info = adapter.start()
    adapter.close()
    adapter.close()
    if name != "fake":
        with pytest.raises(AdapterError):
            asyncio.run(_collect(adapter, RequestSpec("late", _prompt(3, vocab=info.vocab_size), max_tokens=2)))


def test_start_twice_is_safe_and_keeps_the_engine(started):
    adapter, info = started
    assert adapter.started and adapter.info is info
    assert adapter.start() is info  # no second engine, no second warm-up
    assert adapter.info.pid == info.pid and info.ready_s is not None and info.ready_s > 0


class CountingFake(FakeAdapter):
    starts = 0

    def _start(self):
        CountingFake.starts += 1
        return super()._start()


def test_a_sweep_starts_the_engine_once(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from advisor_cli import cli

    monkeypatch.setitem(adapters.REGISTRY, "fake", replace(adapters.REGISTRY["fake"],
                                                           target="tests.adapters.test_contract:CountingFake"))
    CountingFake.starts = 0
    res = CliRunner().invoke(cli, ["sweep", "--scenario", "chat", "--engine", "fake", "--rates", "5,10,20",
                                   "--duration", "1", "--warmup", "0.2", "--max-output-tokens", "4",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.output)["steps"]) >= 2 and CountingFake.starts == 1


def test_run_bench_never_starts_an_engine(tmp_path):
    from advisor.run.bench import BenchConfig, run_bench

    adapter = adapters.create("fake", None)
    with pytest.raises(RuntimeError, match="not started"):
        run_bench(BenchConfig("chat", engine="fake", out_dir=tmp_path), adapter)


class ConvertingFake(FakeAdapter):
    """Spends 0.3 s in start() on a one-off conversion, as llama_cpp/onnxruntime/openvino do on first use."""

    def _start(self) -> EngineInfo:
        import time

        time.sleep(0.3)
        return replace(super()._start(), convert_s=0.3)


def test_ready_time_leaves_out_a_one_off_conversion_and_records_it():
    # was: the first run on an unconverted model reported the conversion as cold start (11.7 s instead of 0.7 s)
    adapter = ConvertingFake(None, FakeAdapter.Options())
    info = adapter.start()
    adapter.close()
    assert info.convert_s == 0.3 and info.ready_s is not None and info.ready_s < 0.25
    assert EngineInfo.from_dict(info.to_dict()).convert_s == 0.3
