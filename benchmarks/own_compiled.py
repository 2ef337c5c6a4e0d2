"""Would a compiled graph speed up own_engine's step on CPU? Eager against `torch.compile` (issue 12 part 4).

    python benchmarks/own_compiled.py --model PATH --threads 2 --batch-sizes 1,8 --rounds 3

The question: a batch-1 step is ~3/4 linear layers and ~1/4 ~250 small eager ops (norms, rope, residual adds,
SiLU, views); would fusing those small ops with TorchInductor (C++ kernels, one call per fused group) take the
quarter away? Each decoder layer's two non-attention halves are compiled as they are in `DecoderLayer.forward`:
input norm + qkv linear + rope, and o linear + residual + norm + gate/up linear + SiLU*up + down linear +
residual. The linears stay own_engine's packed oneDNN kernel (`PackedLinear`, wrapped as an opaque custom op, so
Inductor calls it as it is and fuses what is around it); attention (the paged cache, per-sequence SDPA) stays
eager between the halves. One compiled function per half with dynamic shapes serves all layers and row counts.

Each (mode, batch size, round) cell runs in a fresh process (the patch is process-wide, and a fresh process
keeps the two modes apart), modes in turns within a round: `--batch-sizes` sequences with prompts of ~100
tokens, then `--steps` decode steps timed one by one (median). Before timing, the compiled model's greedy
tokens are checked against the eager model's on the same prompts (fp32: fusion may reorder sums, so the check
is on tokens, and the largest logit difference is printed). The compile time (first calls, Inductor's on-disk
cache cold or warm as it happens) is reported, not timed into the steps. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROMPT_LEN = 100


def compile_layers() -> None:
    """Replace `DecoderLayer.forward` by one that calls two compiled halves around eager attention."""
    import torch
    import torch.nn.functional as F

    from own_engine.model.llama import DecoderLayer
    from own_engine.model.rope import apply_rope

    @torch.library.custom_op("own_bench::packed_linear", mutates_args=(),
                             schema="(Tensor x, Tensor w, int n_out) -> Tensor")  # strings: see __future__
    def packed_linear(x: torch.Tensor, w: torch.Tensor, n_out: int) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, w, None, "none", [], "")

    @packed_linear.register_fake
    def _(x: torch.Tensor, w: torch.Tensor, n_out: int) -> torch.Tensor:
        return x.new_empty(x.shape[0], n_out)

    def pre(x, norm_w, qkv_w, cos, sin, eps: float, hq: int, hkv: int, d: int):
        t = x.shape[0]
        qkv = packed_linear(F.rms_norm(x, (x.shape[-1],), norm_w, eps), qkv_w, (hq + 2 * hkv) * d)
        qk = apply_rope(qkv[:, : (hq + hkv) * d].view(t, hq + hkv, d), cos, sin)
        return qk[:, :hq], qk[:, hq:], qkv[:, (hq + hkv) * d:].view(t, hkv, d)

    def post(x, o, o_w, norm_w, gate_up_w, down_w, eps: float, h: int, ff: int):
        x = x + packed_linear(o, o_w, h)
        gate, up = packed_linear(F.rms_norm(x, (h,), norm_w, eps), gate_up_w, 2 * ff).chunk(2, dim=-1)
        return x + packed_linear(F.silu(gate) * up, down_w, h)

    cpre, cpost = torch.compile(pre, dynamic=True), torch.compile(post, dynamic=True)

    def forward(self, idx, x, cos, sin, attn):
        c = self.cfg
        if self.window is not None or self.qkv_proj.bias is not None or self.o_proj.bias is not None:
            raise SystemExit("own_compiled.py compiles plain LLaMA layers only (no biases, no sliding window)")
        q, k, v = cpre(x, self.input_layernorm.weight, self.qkv_proj.weight, cos, sin, c.rms_norm_eps,
                       c.num_attention_heads, c.num_key_value_heads, c.head_dim)
        o = attn(idx, q, k, v).reshape(x.shape[0], c.q_size)
        return cpost(x, o, self.o_proj.weight, self.post_attention_layernorm.weight, self.gate_up_proj.weight,
                     self.down_proj.weight, c.rms_norm_eps, c.hidden_size, c.intermediate_size)

    DecoderLayer.forward = forward


def one_cell(model: str, mode: str, batch: int, threads: int, steps: int) -> dict:
    import torch

    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams

    check = [list(range(3, 3 + PROMPT_LEN)), list(range(5, 5 + PROMPT_LEN // 2))]
    greedy = SamplingParams(max_tokens=8, ignore_eos=True)
    engine = LLMEngine(EngineConfig(model, threads=threads, linear_kernels="onednn"))
    if engine.num_packed_linears == 0:
        raise SystemExit("own_compiled.py needs oneDNN's packed linears (an fp32 CPU model)")
    out: dict = {"mode": mode, "batch": batch}
    if mode == "compiled":
        eager_tokens = engine.generate(check, greedy)
        with torch.inference_mode():
            ids = torch.tensor(check[0])
            from own_engine.model.attention import NoCacheAttention

            eager_logits = engine.model(ids, torch.arange(len(ids)), NoCacheAttention([0, len(ids)]))
        compile_layers()
        t = time.perf_counter()
        compiled_tokens = engine.generate(check, greedy)  # also the first calls: Inductor compiles here
        out["compile_s"] = time.perf_counter() - t
        with torch.inference_mode():
            logits = engine.model(ids, torch.arange(len(ids)), NoCacheAttention([0, len(ids)]))
        out["greedy_tokens_equal"] = compiled_tokens == eager_tokens
        out["max_logit_diff"] = float((logits - eager_logits).abs().max())
    else:
        engine.generate(check, greedy)  # the same warm-up work as the compiled cell
    for b in range(batch):
        engine.add_request(list(range(3 + b, 3 + b + PROMPT_LEN)), SamplingParams(max_tokens=steps + 8, ignore_eos=True))
    while any(s.num_computed_tokens < s.num_prompt_tokens for s in engine.seqs.values()):
        engine.step()  # prefill (chunks), not timed
    for _ in range(3):
        engine.step()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        engine.step()
        times.append(time.perf_counter() - t)
    out["step_ms_median"] = 1000 * statistics.median(times)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="an fp32 LLaMA-family model folder (e.g. small-100m)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-sizes", default="1,8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--cell", nargs=2, metavar=("MODE", "BATCH"), help=argparse.SUPPRESS)  # one cell, in a child
    args = ap.parse_args()
    if args.cell:
        mode, batch = args.cell
        print(json.dumps(one_cell(args.model, mode, int(batch), args.threads, args.steps)))
        return
    if not (Path(args.model) / "config.json").is_file():
        raise SystemExit(f"--model {args.model}: no config.json there; create one with `advisor models create`")
    batches = [int(b) for b in args.batch_sizes.split(",")]
    cells: list[dict] = []
    for r in range(args.rounds):
        for batch in batches:
            for mode in ("eager", "compiled") if r % 2 == 0 else ("compiled", "eager"):
                cmd = [sys.executable, __file__, "--model", args.model, "--threads", str(args.threads),
                       "--steps", str(args.steps), "--cell", mode, str(batch)]
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"cell {mode} x{batch} failed:\n{done.stderr[-3000:]}")
                cell = json.loads(done.stdout.strip().splitlines()[-1]) | {"round": r}
                cells.append(cell)
                print(json.dumps(cell), file=sys.stderr, flush=True)
    summary = {}
    for batch in batches:
        eager = {c["round"]: c["step_ms_median"] for c in cells if c["batch"] == batch and c["mode"] == "eager"}
        comp = {c["round"]: c["step_ms_median"] for c in cells if c["batch"] == batch and c["mode"] == "compiled"}
        summary[f"batch_{batch}"] = {
            "eager_step_ms_median": statistics.median(eager.values()),
            "compiled_step_ms_median": statistics.median(comp.values()),
            "compiled_over_eager_paired_median": statistics.median(comp[r] / eager[r] for r in eager),
            "compiled_over_eager_paired": sorted(comp[r] / eager[r] for r in eager),
        }
    print(json.dumps({"model": args.model, "threads": args.threads, "rounds": args.rounds, "steps": args.steps,
                      "torch": __import__("torch").__version__, "summary": summary, "cells": cells}, indent=1))


if __name__ == "__main__":
    main()
