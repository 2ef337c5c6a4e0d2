"""Where a batch-1 token's time goes between own_engine's step and the client (issue 12 part 4).

    python benchmarks/own_serving.py --model PATH --threads 2 --requests 8 --prompt-len 100 --max-tokens 32

One request at a time (1 user), greedy, EOS ignored, the same prompt ids at every layer; the time between two
consecutive decode tokens (median over every decode gap of every request) as seen at each layer, outermost last:

- `step`: `LLMEngine.step()` called in a loop on this thread (and, inside it, `ModelRunner.run`, the forward and
  the sampler), nothing else running;
- `async`: the same engine behind `AsyncLLMEngine` (its own thread), tokens taken from `generate()` on an event
  loop in this process;
- `adapter`: `adapters.create("own", ...)`, the engine in its child process as `advisor bench` runs it (socket,
  frames), the gap between the client-side arrival stamps (`Chunk.t_ns`), plus the arrival lag
  `t_ns - t_engine_ns`.

The differences between layers are the serving path's cost per token. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _gaps_ms(stamps_ns: list[int]) -> list[float]:
    """Decode gaps: consecutive stamps after the first token (which ends the prefill)."""
    return [(b - a) / 1e6 for a, b in zip(stamps_ns[1:], stamps_ns[2:], strict=False)]


def _summary(vals: list[float]) -> dict[str, float]:
    q = statistics.quantiles(vals, n=10) if len(vals) > 1 else [vals[0]] * 9
    return {"p50_ms": statistics.median(vals), "p10_ms": q[0], "p90_ms": q[-1], "mean_ms": statistics.fmean(vals),
            "n": len(vals)}


def _time_runner(engine, run_ns: list[int]) -> list[int]:
    """Wrap the engine's `ModelRunner.run` (the forward and the sampler, inside step()) to append its times."""
    run = engine.runner.run

    def timed_run(batch):
        t = time.perf_counter_ns()
        out = run(batch)
        run_ns.append(time.perf_counter_ns() - t)
        return out

    engine.runner.run = timed_run
    return run_ns


def layer_step(args: argparse.Namespace, prompt: list[int]) -> dict:
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    engine = LLMEngine(EngineConfig(args.model, device="cpu", threads=args.threads, max_num_seqs=1, max_model_len=args.max_len))
    run_ns = _time_runner(engine, [])
    params = SamplingParams(temperature=0.0, max_tokens=args.max_tokens, ignore_eos=True)
    gaps, runs = [], []
    for _ in range(args.requests + 1):  # the first request is warm-up
        engine.add_request(list(prompt), params)
        stamps, run_ns[:] = [], []
        while engine.has_unfinished():
            engine.step()
            stamps.append(time.perf_counter_ns())
        gaps.append(_gaps_ms(stamps))
        runs.append([n / 1e6 for n in run_ns[1:]])
    return {"step": _summary([g for r in gaps[1:] for g in r]),
            "runner_run": _summary([g for r in runs[1:] for g in r])}


def layer_async(args: argparse.Namespace, prompt: list[int]) -> dict:
    from own_engine.core.async_engine import AsyncLLMEngine
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    def build() -> LLMEngine:
        engine = LLMEngine(EngineConfig(args.model, device="cpu", threads=args.threads, max_num_seqs=1, max_model_len=args.max_len))
        _time_runner(engine, run_ns)
        return engine

    run_ns: list[int] = []
    # `--async-built-here`: the engine built on this thread, stepped on the engine thread (main before the fix)
    front = AsyncLLMEngine(build()) if args.async_built_here else AsyncLLMEngine(factory=build)
    params = SamplingParams(temperature=0.0, max_tokens=args.max_tokens, ignore_eos=True)

    async def one() -> tuple[list[int], list[int]]:
        eng, got = [], []
        async for t_ns, _ in front.generate(list(prompt), params):
            got.append(time.perf_counter_ns())
            eng.append(t_ns)
        return eng, got

    async def main() -> dict:
        eng_gaps, got_gaps, lag, runs = [], [], [], []
        for i in range(args.requests + 1):
            run_ns[:] = []
            eng, got = await one()
            if i:
                runs += [n / 1e6 for n in run_ns[1:]]
                eng_gaps += _gaps_ms(eng)
                got_gaps += _gaps_ms(got)
                lag += [(g - e) / 1e6 for e, g in zip(eng, got, strict=True)]
        return {"engine_thread": _summary(eng_gaps), "event_loop": _summary(got_gaps), "handoff_lag": _summary(lag),
                "runner_run": _summary(runs)}

    try:
        return asyncio.run(main())
    finally:
        front.close()


def layer_adapter(args: argparse.Namespace, prompt: list[int]) -> dict:
    import adapters
    from adapters.base import RequestSpec

    adapter = adapters.create("own", args.model, device="cpu", threads=args.threads, max_batch=1,
                              max_model_len=args.max_len)
    adapter.start()

    async def main() -> dict:
        eng_gaps, got_gaps, lag = [], [], []
        for i in range(args.requests + 1):
            spec = RequestSpec(request_id=f"r{i}", prompt_ids=tuple(prompt),
                               max_tokens=args.max_tokens, min_tokens=args.max_tokens, ignore_eos=True)
            eng, got = [], []
            async for ch in adapter.stream(spec):
                eng.append(ch.t_engine_ns)
                got.append(ch.t_ns)
            if i:
                eng_gaps += _gaps_ms(eng)
                got_gaps += _gaps_ms(got)
                lag += [(g - e) / 1e6 for e, g in zip(eng, got, strict=True)]
        return {"engine_process": _summary(eng_gaps), "client": _summary(got_gaps), "arrival_lag": _summary(lag)}

    try:
        return asyncio.run(main())
    finally:
        adapter.close()


LAYERS = {"step": layer_step, "async": layer_async, "adapter": layer_adapter}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model folder (e.g. $ADVISOR_HOME/models/small-100m)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--requests", type=int, default=8, help="measured requests per layer (plus one warm-up)")
    ap.add_argument("--prompt-len", type=int, default=100)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--max-len", type=int, default=1088, help="max_model_len (engines.py: 1024 + 64)")
    ap.add_argument("--layers", default=",".join(LAYERS))
    ap.add_argument("--async-built-here", action="store_true",
                    help="async layer: build the engine on the main thread instead of the engine thread")
    args = ap.parse_args()
    import random

    prompt = [random.Random(0).randrange(3, 1000) for _ in range(args.prompt_len)]
    out = {"args": vars(args)}
    for name in args.layers.split(","):
        out[name] = LAYERS[name](args, prompt)
        print(name, json.dumps(out[name]), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
