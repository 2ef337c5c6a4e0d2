"""How many PyTorch ops one own_engine step launches, per layer: the simulated device's `eager_ops`.

    python benchmarks/eager_ops.py                     # tiny and small-100m, extrapolated to llama-1b's layers
    python benchmarks/eager_ops.py --models tiny,small-100m --layers 16

Counts every aten op dispatched (a TorchDispatchMode) during one decode step of 2 sequences and one mixed step
(2 decodes and a 32-token prompt chunk) through own_engine's torch route on CPU (`linear_kernels=torch`: the
ops a CUDA step launches, one kernel each, before CUDA graphs), and the torch calls made from Python in a mixed
step (a TorchFunctionMode): each of those takes the GIL for its arguments and gives it up inside the op. Two models with different layer counts give
ops = fixed + per_layer x layers; the line is printed for `--layers` (llama-1b has 16). On a GPU the count is
the same code's, but some ops (views, slices) launch no kernel: it is an upper bound on launches.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def count(model: str) -> dict:
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            self.n += 1
            return func(*args, **(kwargs or {}))

    class Calls(TorchFunctionMode):
        n = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            self.n += 1
            return func(*args, **(kwargs or {}))

    engine = LLMEngine(EngineConfig(model, device="cpu", linear_kernels="torch", max_num_seqs=4))
    params = SamplingParams(max_tokens=4, ignore_eos=True)
    engine.add_request(list(range(5, 69)), params)
    engine.add_request(list(range(5, 37)), params)
    engine.step()  # both prompts
    with Count() as decode:
        engine.step()
    engine.add_request(list(range(9, 41)), params)
    with Count() as mixed:
        engine.step()
    engine.add_request(list(range(11, 43)), params)
    with Calls() as calls:
        engine.step()
    return {"model": model, "layers": engine.config.num_hidden_layers, "decode_ops": decode.n, "mixed_ops": mixed.n,
            "mixed_python_calls": calls.n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="tiny,small-100m")
    ap.add_argument("--layers", type=int, default=16, help="extrapolate to this many layers (llama-1b: 16)")
    args = ap.parse_args()
    rows = [count(m) for m in args.models.split(",")]
    out: dict = {"rows": rows}
    if len(rows) >= 2 and rows[0]["layers"] != rows[-1]["layers"]:
        a, b = rows[0], rows[-1]
        for kind in ("decode_ops", "mixed_ops", "mixed_python_calls"):
            per_layer = (b[kind] - a[kind]) / (b["layers"] - a["layers"])
            fixed = a[kind] - per_layer * a["layers"]
            out[kind] = {"fixed": fixed, "per_layer": per_layer, f"at_{args.layers}_layers": fixed + per_layer * args.layers}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
