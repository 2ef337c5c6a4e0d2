"""own_engine's decode step in one native call against the per-layer native path (issue 12 part 4).

    python benchmarks/decode_step_calls.py --model PATH --batch-sizes 1,8 --rounds 40

One engine, one process, the same sequences: `--batch` sequences with 100-token prompts are prefilled, then
decode-only steps are timed in rounds of 5, the two paths in turns (the order flips every round, so a drift of
the machine falls on both):

- `one_call`: the engine as it ships: a decode step's layers in one call (`kernels/decode_step.c`);
- `per_layer`: the same kernels called a layer at a time, 9 calls each (`native_layer.layer_by_layer`), as before.

And the floor under both: the step's 49 linears alone on a random row, timed in the same rounds (what a step
would cost if everything but reading the weights were free). Prints, per batch size, the median step of each in
ms, the median of the per-round ratios (per-layer / one call), and each path's cost above the linears; one JSON
document at the end. Needs the native kernels (AVX-512F and a C compiler).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="an HF folder, e.g. $ADVISOR_HOME/models/small-100m")
    ap.add_argument("--batch-sizes", default="1,8")
    ap.add_argument("--rounds", type=int, default=40, help="rounds of 5 steps per path (40 x 15 steps < 1900)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.rounds * 10 + 20 > 1800:
        sys.exit("decode_step_calls.py: --rounds at most 178 (the sequences' 1900 tokens)")
    if not Path(args.model, "config.json").is_file():
        sys.exit(f"decode_step_calls.py: no model at {args.model} (make one: advisor models create small-100m)")
    import torch

    torch.set_num_threads(args.threads)
    import own_engine.kernels.native_layer as native_layer
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams
    from own_engine.kernels.panel_linear import PanelLinear

    engine = LLMEngine(EngineConfig(args.model, device="cpu", threads=args.threads))
    if not engine.kernels.native_layers:
        sys.exit(f"decode_step_calls.py: own_engine runs without native kernels here ({engine.describe()})")
    one_call = native_layer.decode_layers_forward
    linears = [m for m in engine.model.modules() if isinstance(m, PanelLinear)]
    out = {"model": args.model, "threads": args.threads, "rounds": args.rounds, "batches": []}
    for batch in (int(b) for b in args.batch_sizes.split(",")):
        rows = [torch.randn(batch, m.in_features) for m in linears]
        for b in range(batch):
            engine.add_request(list(range(10 + b, 110 + b)), SamplingParams(max_tokens=1900, ignore_eos=True))
        for _ in range(20):
            engine.step()
        times: dict[str, list[float]] = {"one_call": [], "per_layer": [], "linears": []}
        for r in range(args.rounds):
            for name in ("one_call", "per_layer", "linears") if r % 2 else ("linears", "per_layer", "one_call"):
                native_layer.decode_layers_forward = native_layer.layer_by_layer if name == "per_layer" else one_call
                t0 = time.perf_counter()
                for _ in range(5):
                    if name == "linears":
                        for m, x in zip(linears, rows, strict=True):
                            m(x)
                    else:
                        engine.step()
                times[name].append((time.perf_counter() - t0) / 5 * 1e3)
        native_layer.decode_layers_forward = one_call
        for seq in list(engine.scheduler.running) + list(engine.scheduler.waiting):
            engine.abort(seq.seq_id)
        med = {k: statistics.median(v) for k, v in times.items()}
        ratio = statistics.median(p / o for p, o in zip(times["per_layer"], times["one_call"], strict=True))
        row = {"batch": batch, "median_ms": med, "per_layer_over_one_call": ratio,
               "above_linears_ms": {k: med[k] - med["linears"] for k in ("one_call", "per_layer")}, "ms": times}
        out["batches"].append(row)
        print(f"batch {batch}: one call {med['one_call']:.2f} ms, per layer {med['per_layer']:.2f} ms "
              f"(x{ratio:.3f}), linears alone {med['linears']:.2f} ms; above the linears: one call "
              f"{row['above_linears_ms']['one_call']:.2f} ms, per layer {row['above_linears_ms']['per_layer']:.2f} ms",
              flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
