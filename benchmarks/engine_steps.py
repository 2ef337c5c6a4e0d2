"""Where a saved own_engine run's time went, step by step, from its own records: no rerun, no GPU needed.

    python benchmarks/engine_steps.py ../shared/gpu-runs/h200-2026-11-26/20261126-010849-chat-closed-own-f415
    python benchmarks/engine_steps.py RUN_DIR [RUN_DIR ...] [--json]

own_engine stamps every token of one engine step with the same engine-side time (`chunk_t_engine_ns` in
requests.parquet, taken right after the step). So the run's steps can be rebuilt from the requests alone:
tokens sharing a stamp are one step, and the gap to the previous stamp is that step's wall time on the
engine's clock (the step itself and the engine thread's work around it; the client's clock plays no part).
A step that gave some request its first token carried that request's prompt ("prompt steps"); the others
only decoded. Each step's context lengths follow from the requests' prompt lengths and tokens so far.

Limits, said with the output: a step that produced no token (a prompt chunk that did not finish its prompt,
with no decodes beside it) is invisible, and its time counts in the next step's gap; the first step of the
run has no gap. Requests that failed or ended without engine stamps are left out. The run must come from
own_engine (other engines do not stamp tokens with a step time).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import pandas as pd

BATCH_EDGES = (0, 1, 2, 4, 8, 16, 24, 32, 48, 64, 128, 256, 1 << 20)
PROMPT_EDGES = (0, 500, 1000, 2000, 4000, 8000, 1 << 30)


def steps_of(run: Path) -> pd.DataFrame:
    """One row per visible engine step: gap_ms (wall time since the previous step), batch (requests that got a
    token), prompts and prompt_tokens (requests whose first token it was, their prompt lengths), max_context."""
    df = pd.read_parquet(run / "requests.parquet")
    items: dict[int, list[tuple[int, bool, int]]] = defaultdict(list)  # stamp -> (context, first, prompt len)
    for rec in df.itertuples():
        stamps, tokens = rec.chunk_t_engine_ns, rec.chunk_tokens
        if stamps is None or len(stamps) == 0 or len(stamps) != len(tokens):
            continue
        done = 0
        for j, (t, k) in enumerate(zip(stamps, tokens, strict=True)):
            items[int(t)].append((int(rec.n_in) + done, j == 0, int(rec.n_in)))
            done += int(k)
    if len(items) < 2:
        raise SystemExit(f"{run}: fewer than two engine-stamped steps; is this an own_engine run?")
    stamps = sorted(items)
    rows = []
    for prev, t in zip(stamps, stamps[1:]):
        step = items[t]
        prompts = [n for _, first, n in step if first]
        rows.append({"gap_ms": (t - prev) / 1e6, "batch": len(step), "prompts": len(prompts),
                     "prompt_tokens": sum(prompts), "max_context": max(c for c, _, _ in step)})
    return pd.DataFrame(rows)


def summary(run: Path, steps: pd.DataFrame) -> dict:
    decode = steps[steps.prompts == 0]
    prompt = steps[steps.prompts > 0]
    wall = float(steps.gap_ms.sum())

    def table(frame: pd.DataFrame, col: str, edges: tuple[int, ...]) -> list[dict]:
        out = []
        for lo, hi in zip(edges, edges[1:]):
            part = frame[(frame[col] > lo) & (frame[col] <= hi)]
            if len(part):
                out.append({col: f"{lo + 1}-{hi}" if hi < 1 << 20 else f">{lo}", "steps": len(part),
                            "gap_ms_p50": round(float(part.gap_ms.median()), 2),
                            "gap_ms_p90": round(float(part.gap_ms.quantile(0.9)), 2)})
        return out

    return {
        "run": run.name,
        "steps": len(steps),
        "span_s": round(wall / 1e3, 2),
        "decode_steps": len(decode),
        "decode_gap_ms_p50": round(float(decode.gap_ms.median()), 2) if len(decode) else None,
        "prompt_steps": len(prompt),
        "prompt_gap_ms_p50": round(float(prompt.gap_ms.median()), 2) if len(prompt) else None,
        "prompt_steps_share_of_wall": round(float(prompt.gap_ms.sum()) / wall, 3) if wall else None,
        "mean_batch": round(float(steps.batch.mean()), 1),
        "decode_by_batch": table(decode, "batch", BATCH_EDGES),
        "prompt_by_prompt_tokens": table(prompt, "prompt_tokens", PROMPT_EDGES),
        "limits": "steps that produced no token are invisible (their time is in the next gap); gaps are on the "
                  "engine's clock",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="run folders (with requests.parquet)")
    ap.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    args = ap.parse_args(argv)
    for run in args.runs:
        if not (run / "requests.parquet").is_file():
            print(f"engine_steps: {run} has no requests.parquet; give a saved run's folder", file=sys.stderr)
            return 2
    out = [summary(run, steps_of(run)) for run in args.runs]
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    for s in out:
        print(f"{s['run']}: {s['steps']} steps in {s['span_s']} s (mean batch {s['mean_batch']}); decode-only "
              f"{s['decode_steps']} (gap p50 {s['decode_gap_ms_p50']} ms), with a prompt {s['prompt_steps']} "
              f"(gap p50 {s['prompt_gap_ms_p50']} ms, {100 * s['prompt_steps_share_of_wall']:.0f}% of the wall time)")
        for name, rows in (("decode-only steps by batch", s["decode_by_batch"]),
                           ("steps with a prompt, by its tokens", s["prompt_by_prompt_tokens"])):
            print(f"  {name}:")
            for r in rows:
                key = next(iter(r))
                print(f"    {key} {r[key]:>10}: {r['steps']:5d} steps, gap p50 {r['gap_ms_p50']:8.2f} ms, "
                      f"p90 {r['gap_ms_p90']:8.2f} ms")
    print(f"  ({out[0]['limits']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
