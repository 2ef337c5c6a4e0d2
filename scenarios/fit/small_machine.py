"""The `fit` block of a fitted scenario: defaults that run it on a 2-core CPU with the `tiny` model in a minute.

The same conventions as the shipped scenarios: 5 s warm-up and 55 s of
measurement at 2.5 req/s (about 140 measured requests: enough for a p95),
prompts scaled by a power of two until their mean is at most 1024 tokens,
and caps (2048 in, 128 out) that keep every request inside the tiny model's
4096-token context. On/off traffic whose idle periods are longer than a few
seconds becomes its in-burst gamma process, since a one-minute run cannot
show minute-long silences; for the same reason a gamma gap CV above 2 becomes
2. Batched arrivals keep their group size where a group still comes at least every 5 s at 2.5 req/s, else groups shrink to 12.5
requests every 5 s. Sessions keep their shape at 2.5 turns per second
(fewer conversations), with think times of at most 5 s so a one-minute run holds
whole conversations (`fit.sessions`). `bench --full-scale` ignores this block.
"""

from __future__ import annotations

from typing import Any

from scenarios.fit.collect import LengthSums

RATE_RPS = 2.5
MAX_ON_CV = 2.0
MEAN_INPUT_TOKENS = 1024
MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS = 2048, 128
MAX_THINK_S = 5.0
MAX_PERIOD_S = 5.0  # batched arrivals: at most this long between groups, a dozen groups in a minute


def _session_fit(sessions: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(fit entries, why) for a sessions scenario: turns at RATE_RPS (fit.rate_rps), think times capped."""
    fit: dict[str, Any] = {"rate_rps": RATE_RPS}
    why = [f"{RATE_RPS:g} turns/s (fewer conversations, each as in the log)"]
    if sessions["think_s"] > MAX_THINK_S:
        fit["sessions"] = {**sessions, "think_s": MAX_THINK_S}
        why.append(f"think time {MAX_THINK_S:g} s instead of the log's {sessions['think_s']:.3g} s, so a one-minute "
                   "run holds whole conversations")
    return fit, why


def small_machine_fit(arrival: dict[str, Any], rate_rps: float, lengths: LengthSums,
                      sessions: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    """(fit block, comment); `sessions`: the scenario's sessions block, which then drives the arrivals."""
    fit: dict[str, Any] = {}
    why = []
    if sessions is not None:
        fit, why = _session_fit(sessions)
    elif arrival["process"] == "onoff" and arrival["off_s"] > 5:
        fit["arrival"] = {"process": "gamma", "rate_rps": RATE_RPS, "cv": min(float(arrival["on_cv"]), MAX_ON_CV)}
        why.append(f"the log's idle periods (~{arrival['off_s']:.3g} s) do not fit a one-minute run, so it keeps the "
                   "bursts' own gamma gaps")
    elif arrival["process"] == "gamma" and arrival["cv"] > MAX_ON_CV:
        fit["arrival"] = {"process": "gamma", "rate_rps": RATE_RPS, "cv": MAX_ON_CV}
        why.append(f"gap CV {MAX_ON_CV:g} instead of the log's {arrival['cv']:.3g}: gaps that bursty hold either "
                   "nothing or hundreds of requests in a one-minute run")
    elif arrival["process"] == "batched" and arrival["batch_size"] / RATE_RPS > MAX_PERIOD_S:
        size = RATE_RPS * MAX_PERIOD_S
        fit["arrival"] = {**arrival, "batch_size": size, "period_s": MAX_PERIOD_S}
        why.append(f"groups of {size:g} requests every {MAX_PERIOD_S:g} s instead of the log's "
                   f"{arrival['batch_size']:.4g}, so a one-minute run holds a dozen groups")
    elif abs(rate_rps - RATE_RPS) > 0.01 * RATE_RPS:
        fit["rate_rps"] = RATE_RPS  # batched: the groups keep their size and come less often
    if sessions is None and abs(rate_rps - RATE_RPS) > 0.01 * RATE_RPS:
        why.append(f"{RATE_RPS:g} req/s instead of the log's {rate_rps:.3g} (enough requests for a p95 in a minute, "
                   "few enough for two cores)")
    fit["warmup_s"] = 5
    fit["duration_s"] = 55
    scale = 1.0
    while lengths.mean_in * scale > MEAN_INPUT_TOKENS and scale > 1 / 64:
        scale /= 2
    if scale < 1:
        fit["length_scale"] = scale
    if lengths.max_in * scale > MAX_INPUT_TOKENS:
        fit["max_input_tokens"] = MAX_INPUT_TOKENS
    if lengths.max_out * scale > MAX_OUTPUT_TOKENS:
        fit["max_output_tokens"] = MAX_OUTPUT_TOKENS
    comment = ("defaults for a 2-core CPU with the built-in tiny model (4096-token context), about a minute; "
               "`bench --full-scale` runs the fitted traffic above instead")
    if why:
        comment += "; " + "; ".join(why)
    return fit, comment
