"""Synthetic request logs with known parameters, made independently of advisor's own generators.

Arrival times come from plain numpy (gamma gaps, alternating on/off periods, a
Poisson process thinned to a diurnal curve); lengths are lognormal. Writers
produce the layouts `advisor scenarios fit` reads (OpenAI-style JSONL, CSV).
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

T0 = 1_700_000_000.0  # 2023-11-14, epoch seconds


def gamma_times(rng: np.random.Generator, rate: float, cv: float, duration_s: float) -> np.ndarray:
    shape = 1 / cv ** 2
    n = int(rate * duration_s * 1.2) + 100
    t = np.cumsum(rng.gamma(shape, 1 / (rate * shape), size=n))
    return t[t < duration_s]


def onoff_times(rng: np.random.Generator, on_rate: float, on_s: float, off_s: float, phase_cv: float,
                duration_s: float) -> np.ndarray:
    """Poisson arrivals during on periods; gamma on and off lengths."""
    k = 1 / phase_cv ** 2
    out, t = [], 0.0
    while t < duration_s:
        end = t + rng.gamma(k, on_s / k)
        n = rng.poisson(on_rate * (end - t))
        out.append(np.sort(rng.uniform(t, end, size=n)))
        t = end + rng.gamma(k, off_s / k)
    times = np.concatenate(out)
    return times[times < duration_s]


def diurnal_rate(t: np.ndarray, mean: float, amplitude: float) -> np.ndarray:
    return mean + amplitude * np.sin(2 * math.pi * t / 86400.0)


def diurnal_times(rng: np.random.Generator, mean: float, amplitude: float, duration_s: float) -> np.ndarray:
    """A Poisson process with rate mean + amplitude * sin(2 pi t / 1 day), by thinning."""
    peak = mean + amplitude
    t = gamma_times(rng, peak, 1.0, duration_s)
    keep = rng.uniform(0, peak, size=t.size) < diurnal_rate(t, mean, amplitude)
    return t[keep]


def lognormal_lengths(rng: np.random.Generator, n: int, median: float, sigma: float) -> np.ndarray:
    return np.maximum(1, np.rint(rng.lognormal(math.log(median), sigma, size=n))).astype(int)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def openai_rows(t: np.ndarray, n_in: np.ndarray, n_out: np.ndarray, **extra: list[Any]) -> list[dict[str, Any]]:
    """Gateway-style rows: epoch-second `created`, OpenAI usage, and text that must never be read."""
    rows = []
    for i in range(t.size):
        r: dict[str, Any] = {"id": f"chatcmpl-{i}", "created": float(T0 + t[i]), "model": "m1",
                             "messages": [{"role": "user", "content": "secret prompt text"}],
                             "response": {"choices": [{"message": {"content": "secret answer text"}}]},
                             "usage": {"prompt_tokens": int(n_in[i]), "completion_tokens": int(n_out[i]),
                                       "total_tokens": int(n_in[i] + n_out[i])}}
        for k, v in extra.items():
            r[k] = v[i]
        rows.append(r)
    return rows


def batched_mooncake_rows(n: int = 12_031, batch_mean: float = 10.2, period_ms: int = 3000,
                          seed: int = 0) -> list[dict[str, Any]]:
    """The Mooncake conversation trace's arrivals: groups of ~10 requests on the same millisecond every ~3 s.

    Group sizes are 1 + Poisson(batch_mean - 1); periods jitter by up to 2% around `period_ms`.
    Mooncake layout: ms `timestamp`, `input_length`, `output_length`, `hash_ids`.
    """
    rng = np.random.default_rng(seed)
    jitter = period_ms // 50
    rows: list[dict[str, Any]] = []
    t = 0
    while len(rows) < n:
        for _ in range(min(1 + int(rng.poisson(batch_mean - 1)), n - len(rows))):
            rows.append({"timestamp": t, "input_length": int(rng.integers(100, 8000)),
                         "output_length": int(rng.integers(5, 500)),
                         "hash_ids": [int(x) for x in rng.integers(0, 50, 3)]})
        t += period_ms + int(rng.integers(-jitter, jitter + 1))
    return rows
