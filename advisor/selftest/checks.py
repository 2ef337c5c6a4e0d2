"""The checks `advisor selftest` runs, one function each; each returns a `Check` that says in words what it found.

NVML (GPU telemetry), greedy ids of own_engine on the device against the CPU
fp32 reference (and transformers), the bare decode step (bandwidth, MBU, against
transformers generate()), a short served run with telemetry through `advisor
bench`'s machinery, and continuous against static batching on `bursty`.
Nothing here needs a network. A check that crashes is reported as failed by
the caller (advisor.selftest.run), never skipped in silence.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from advisor.selftest.model import Check, SelftestConfig

CACHE_BYTES = 256 * 2**20  # a decode step that reads less may be served from CPU caches (MBU past 100%)
GREEDY_PROMPTS = ([17, 22, 27, 32, 37, 42, 47, 52, 57, 62, 67, 72, 77, 82], [40, 41, 42], [9] * 7, [5, 300, 7, 900, 11])


def nvml_check(cfg: SelftestConfig) -> Check:
    """NVML sees the GPU (power, utilisation, memory telemetry depend on it)."""
    from adapters.gpus import list_gpus, probe

    why = probe()
    gpus = [{"index": g.index, "name": g.name, "memory_total_mb": g.memory_total_mb} for g in list_gpus()]
    if cfg.device == "cpu":
        seen = f"it sees {len(gpus)} GPU(s)" if why is None else f"NVML: {why}"
        return Check("nvml", "NVML (GPU telemetry)", "n/a",
                     f"--device cpu: no GPU is measured, so GPU telemetry does not apply ({seen})", {"gpus": gpus})
    if why is not None:
        return Check("nvml", "NVML (GPU telemetry)", "fail",
                     f"NVML cannot read the GPU ({why}): runs here would have no GPU power, utilisation or memory "
                     "telemetry; install nvidia-ml-py and check the driver (nvidia-smi)", {"gpus": gpus})
    return Check("nvml", "NVML (GPU telemetry)", "pass",
                 f"NVML sees {len(gpus)} GPU(s): {', '.join(g['name'] for g in gpus)}", {"gpus": gpus})


def ensure_model(name: str) -> tuple[Path, bool]:
    """The model folder for a preset name in the model cache, created (random weights, no network) if missing."""
    from model_cache.create import create_model
    from model_cache.paths import is_model_dir, models_root

    path = models_root() / name
    if is_model_dir(path):
        return path, False
    return create_model(name, name), True


def _hf_logits(path: Path) -> Any:
    """transformers fp32 on CPU as a logits function ids -> [T, vocab]: an independent reference."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    transformers.utils.logging.disable_progress_bar()  # the selftest's console says what it does
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()

    def logits(ids: list[int]) -> Any:
        with torch.inference_mode():
            return model(torch.tensor([ids])).logits[0].float()

    return logits


def greedy_disagreement(logits_fn: Any, prompts: list[list[int]], outs: list[list[int]]) -> str | None:
    """Where `outs` stop being the greedy continuation under `logits_fn` (None: they are it), in words.

    One causal forward over prompt + output per prompt (teacher forcing): the output is greedy exactly when
    every output token is the argmax of the logits before it. The margin says how near a tie it was.
    """
    for i, (p, out) in enumerate(zip(prompts, outs, strict=True)):
        lg = logits_fn(p + out)[len(p) - 1:len(p) + len(out) - 1]  # [n_out, vocab]: the logits each token followed
        best = lg.argmax(-1).tolist()
        for j, (want, got) in enumerate(zip(best, out, strict=True)):
            if want != got:
                margin = float(lg[j, want] - lg[j, got])
                return (f"prompt {i}, token {j}: {got} where the reference's argmax is {want} (logit margin "
                        f"{margin:.3g}{'; a near-tie that rounding can flip' if margin < 1e-3 else ''})")
    return None


def greedy_check(cfg: SelftestConfig, model: str) -> Check:
    """own_engine's greedy ids on the device (fp32, its serving path) are greedy under the CPU fp32 reference
    (own_engine.model.reference, no KV cache) and under transformers fp32."""
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine
    from own_engine.core.sampling_params import SamplingParams
    from own_engine.model import reference

    n = 12 if cfg.quick else 32
    path, created = ensure_model(model)
    prompts = [list(p) for p in GREEDY_PROMPTS]
    figures: dict[str, Any] = {"model": str(path), "created": created, "prompts": len(prompts), "tokens": n}
    params = SamplingParams(max_tokens=n, ignore_eos=True)
    engine = LLMEngine(EngineConfig(path, device=cfg.device, dtype="float32", max_num_seqs=8, max_model_len=256))
    own = engine.generate(prompts, params)
    figures["own_device"] = str(engine.device)
    problems = [f"own_engine returned {len(o)} tokens for prompt {i}, not {n}" for i, o in enumerate(own) if len(o) != n]
    if not problems and (d := greedy_disagreement(lambda ids: reference.logits(path, ids), prompts, own)) is not None:
        problems.append(f"own_engine on {cfg.device} (fp32, batched, paged KV) is not greedy under the CPU fp32 "
                        f"reference at {d}")
    if cfg.device == "cuda":  # the serving precision too: agreement only (bf16 rounding may flip near-ties)
        bf16 = LLMEngine(EngineConfig(path, device="cuda", dtype="bfloat16", max_num_seqs=8, max_model_len=256)).generate(
            prompts, params)
        same = sum(u == v for x, y in zip(bf16, own, strict=True) for u, v in zip(x, y, strict=True))
        figures["bf16_token_agreement"] = round(same / (n * len(prompts)), 4)
    figures["transformers_agrees"] = None
    if not problems and importlib.util.find_spec("transformers") is not None:
        d = greedy_disagreement(_hf_logits(path), prompts, own)
        figures["transformers_agrees"] = d is None
        if d is not None:
            problems.append(f"transformers fp32 disagrees with own_engine's greedy ids at {d}")
    if problems:
        return Check(f"greedy:{model}", f"Greedy ids, {model}", "fail", "; ".join(problems), figures)
    also = " and under transformers fp32" if figures["transformers_agrees"] else ""
    return Check(f"greedy:{model}", f"Greedy ids, {model}", "pass",
                 f"{len(prompts)} prompts x {n} tokens, batched on {cfg.device}: every token is the argmax of the CPU "
                 f"fp32 reference{also}", figures)


def _own_steps(cfg: SelftestConfig, path: Path, batches: tuple[int, ...], context: int, steps: int,
               repeats: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """own_engine's bare decode step at each batch size, with the device's measured copy bandwidth."""
    from advisor.selftest.step import decode_bytes_per_step, measure_bandwidth_gbs, median_of, run_decode
    from own_engine.core.engine_config import EngineConfig
    from own_engine.core.llm_engine import LLMEngine

    engine = LLMEngine(EngineConfig(path, device=cfg.device, max_num_seqs=max(batches),
                       max_num_batched_tokens=max(batches) * context,
                       num_kv_blocks=max(batches) * -(-(context + steps + 4) // 16) + 8))
    bw = measure_bandwidth_gbs(engine.device, 256 if cfg.quick else 1024, repeats)
    rows = []
    for b in batches:
        step_s = median_of(lambda b=b: run_decode(engine, b, context, steps), repeats)
        read = decode_bytes_per_step(engine, b, context + steps // 2)
        rows.append({"batch": b, "step_ms": round(step_s * 1e3, 3), "tok_s": round(b / step_s, 1),
                     "bytes_per_step": read, "mbu": round(read / step_s / (bw * 1e9), 4)})
    facts = {"device": engine.device, "dtype": engine.model.dtype, "precision": engine.precision,
             "bandwidth_gbs": round(bw, 2)}
    return facts, rows


def step_check(cfg: SelftestConfig) -> Check:
    """The bare decode step: bandwidth, step time and MBU at two batch sizes, against transformers generate()."""
    from advisor.selftest.step import hf_generate_tok_s

    path, created = ensure_model(cfg.step_model)
    batches = (1, 4) if cfg.quick else ((1, 8) if cfg.device == "cpu" else (1, 64))
    context, steps, repeats = (64, 8, 2) if cfg.quick else (128, 16, 3)
    facts, rows = _own_steps(cfg, path, batches, context, steps, repeats)
    dev, bw = facts["device"], facts["bandwidth_gbs"]
    figures: dict[str, Any] = {"model": str(path), "created": created, "device": str(dev),
                               "precision": facts["precision"], "bandwidth_gbs": bw, "context": context,
                               "decode": rows}
    if importlib.util.find_spec("transformers") is not None:
        import transformers

        transformers.utils.logging.disable_progress_bar()
        for row in rows:
            hf = hf_generate_tok_s(path, dev, facts["dtype"], row["batch"], context, steps, max(1, repeats - 1))
            row["transformers_tok_s"] = round(hf, 1)
            row["own_over_transformers"] = round(row["tok_s"] / hf, 3)
    words = "; ".join(f"batch {r['batch']}: step {r['step_ms']:.2f} ms, MBU {r['mbu']:.0%}"
                      + (f", {r['own_over_transformers']}x transformers generate()" if "own_over_transformers" in r
                         else "") for r in rows)
    if any(r["mbu"] > 1.1 for r in rows) and min(r["bytes_per_step"] for r in rows) < CACHE_BYTES:
        return Check("step", "Bare decode step", "warn",
                     f"MBU over 100% with a model small enough to be read from the CPU's caches, not memory: "
                     f"MBU means nothing for it; use a larger --step-model ({words})", figures)
    if any(not 0 < r["mbu"] <= 1.1 for r in rows):
        return Check("step", "Bare decode step", "fail",
                     f"MBU outside (0, 110%]: a timer without a device sync or a wrong bandwidth ({words})", figures)
    return Check("step", "Bare decode step", "pass", f"{path.name} on {dev}, {bw:.1f} GB/s copy bandwidth; {words}",
                 figures)
