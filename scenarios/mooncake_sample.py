"""Writes the synthetic Mooncake-format sample trace shipped as `scenarios/traces/mooncake_sample.jsonl`.

Synthetic, not real traffic: multi-turn conversations under a few shared
system prompts, so equal `hash_ids` (512-token blocks) recur across requests
the way they do in the Mooncake (FAST'25) traces. Regenerate with
`python -m scenarios.mooncake_sample`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scenarios.types import PREFIX_BLOCK_TOKENS

SAMPLE_PATH = Path(__file__).resolve().parent / "traces" / "mooncake_sample.jsonl"


def make_mooncake_sample(seed: int = 0, n_conversations: int = 60, rate_rps: float = 2.0,
                         n_system_prompts: int = 4) -> list[dict]:
    """Rows in Mooncake JSONL form: timestamp (ms), input_length, output_length, hash_ids."""
    rng = np.random.default_rng(seed)
    next_hash = 0

    def new_blocks(k: int) -> list[int]:
        nonlocal next_hash
        out = list(range(next_hash, next_hash + k))
        next_hash += k
        return out

    systems = [new_blocks(2) for _ in range(n_system_prompts)]  # 1024-token shared system prompts
    events: list[tuple[float, int, int, list[int]]] = []
    t = 0.0
    for _ in range(n_conversations):
        t += float(rng.exponential(len(systems) / rate_rps))
        context = list(systems[int(rng.integers(len(systems)))])  # whole blocks every turn shares
        turn_t = t
        for _turn in range(int(rng.integers(1, 6))):
            context += new_blocks(int(rng.integers(0, 2)))  # the conversation grows by whole blocks
            if len(context) >= 6:
                break
            tail = int(rng.integers(16, PREFIX_BLOCK_TOKENS))  # this turn's new text: a partial last block
            n_in = len(context) * PREFIX_BLOCK_TOKENS + tail
            hash_ids = context + new_blocks(1)  # Mooncake lists every block, the partial last one too
            events.append((turn_t, n_in, int(rng.integers(32, 256)), hash_ids))
            turn_t += float(rng.gamma(2.0, 5.0))  # the user reads and types
    events.sort(key=lambda e: e[0])
    return [{"timestamp": int(round(e[0] * 1000)), "input_length": e[1], "output_length": e[2], "hash_ids": e[3]}
            for e in events]


def main() -> None:
    rows = make_mooncake_sample()
    SAMPLE_PATH.parent.mkdir(parents=True, exist_ok=True)
    SAMPLE_PATH.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} requests to {SAMPLE_PATH}")


if __name__ == "__main__":
    main()
