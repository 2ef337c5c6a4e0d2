"""The memory a run's plan needs, estimated from its resolved settings before anything is built or started.

Each flag alone is bounded (`--rate`, `--max-requests`, `--max-input-tokens`...), but their product is not:
a million requests of a thousand output tokens keep ~57 GB of per-token timestamps. `check` multiplies
what a run keeps until it ends (the schedule, one record per request with a timestamp per output token)
and what it holds while requests are in flight (their prompts' token ids) and refuses, in one line, a
plan over the budget: by default half of this machine's memory (`DEFAULT_FRACTION`), else
`--memory-budget GB`. It reads the settings only (`scenarios.schedule.resolve`, no schedule is drawn),
so a refusal costs well under a second. The per-item sizes are CPython's, measured on 3.11; they are
upper bounds of a typical run, not an accounting of every byte (the engine's own memory is not here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import psutil

from scenarios import spec as S
from scenarios.overrides import Overrides
from scenarios.schedule import MAX_SCHEDULE_REQUESTS, load_pairs, load_trace, resolve
from scenarios.sessions import expected_turns
from scenarios.settings import Settings

DEFAULT_FRACTION = 0.5  # of this machine's memory: the rest is the engine's, the OS's and other programs'
REQUEST_BYTES = 2_000  # a ScheduledRequest and its RequestRecord without their per-token lists
OUTPUT_TOKEN_BYTES = 56  # a chunk's arrival time (int, 36 B + an 8 B slot) and its token count (a cached small int)
PROMPT_TOKEN_BYTES = 36  # a prompt token id in a list (an int, 28 B + an 8 B slot)
IN_FLIGHT_S = 1.0  # an open loop is assumed to hold the prompts of one second of its arrivals at once


class MemoryBudgetError(ValueError):
    """The plan needs more memory than the budget; the message says how much, why, and what to lower."""


@dataclass(frozen=True)
class Estimate:
    n_requests: int
    mean_in: float  # prompt tokens, scaled and capped (an upper bound of the mean: min(x*s, cap) is concave)
    mean_out: float
    in_flight: int  # requests whose prompts are held at once
    kept_bytes: float  # the schedule and the records, until the run ends
    prompt_bytes: float  # the prompts in flight

    @property
    def total_bytes(self) -> float:
        return self.kept_bytes + self.prompt_bytes


def default_budget_bytes() -> float:
    """DEFAULT_FRACTION of this machine's physical memory."""
    return DEFAULT_FRACTION * psutil.virtual_memory().total


def estimate(scenario: S.Scenario, overrides: Overrides | None = None, seed: int = 0) -> Estimate:
    """What the plan of (scenario, overrides) keeps and holds, from its settings alone."""
    st = resolve(scenario, overrides, seed)
    n, in_flight = _requests(st)
    mean_in = _scaled(_mean_len(scenario, "input"), st.length_scale, st.max_input_tokens)
    mean_out = _scaled(_mean_len(scenario, "output"), st.length_scale, st.max_output_tokens)
    if st.sessions is not None:  # a turn's prompt holds the session's history: count the whole session's inputs
        mean_in *= expected_turns(st.sessions.turns)
    kept = n * (REQUEST_BYTES + mean_out * OUTPUT_TOKEN_BYTES)
    return Estimate(n, mean_in, mean_out, in_flight, kept, min(in_flight, n) * mean_in * PROMPT_TOKEN_BYTES)


def check(scenario: S.Scenario, overrides: Overrides | None = None, seed: int = 0,
          budget_gb: float | None = None) -> Estimate:
    """The estimate, or a MemoryBudgetError when it is over `budget_gb` (None: DEFAULT_FRACTION of the memory)."""
    e = estimate(scenario, overrides, seed)
    budget = budget_gb * 1e9 if budget_gb is not None else default_budget_bytes()
    if e.total_bytes > budget:
        whose = (f"--memory-budget {budget_gb:g}" if budget_gb is not None
                 else f"{DEFAULT_FRACTION:.0%} of this machine's {_gb(psutil.virtual_memory().total)}")
        raise MemoryBudgetError(
            f"this run would need about {_gb(e.total_bytes)}, over its budget of {_gb(budget)} "
            f"({whose}): {e.n_requests:,} requests x {e.mean_out:,.0f} output tokens kept "
            f"({_gb(e.kept_bytes)}) and {e.in_flight:,} prompts of {e.mean_in:,.0f} tokens in flight "
            f"({_gb(e.prompt_bytes)}); lower --rate, --duration, --max-requests, --length-scale or "
            "--max-*-tokens, or raise --memory-budget GB")
    return e


def _requests(st: Settings) -> tuple[int, int]:
    """(requests the schedule will hold, requests in flight at once) from the settings."""
    window_s = st.warmup_s + st.duration_s
    sess, a = st.sessions, st.arrival
    if sess is not None:
        turns = expected_turns(sess.turns)
        if sess.closed:
            assert sess.users is not None and sess.sessions_per_user is not None
            n, in_flight = sess.users * sess.sessions_per_user * turns, sess.users
        else:
            n = (st.target_rps or 0.0) * window_s
            in_flight = math.ceil((st.target_rps or 0.0) * IN_FLIGHT_S)
    elif isinstance(a, S.ClosedArrival):
        n, in_flight = a.concurrency * a.requests_per_user, a.concurrency
    elif isinstance(a, S.OfflineArrival):
        n = in_flight = a.requests
    else:
        n = (st.target_rps or 0.0) * window_s
        in_flight = math.ceil((st.target_rps or 0.0) * IN_FLIGHT_S)
    cap = min(st.max_requests or MAX_SCHEDULE_REQUESTS, MAX_SCHEDULE_REQUESTS)  # more is refused by the schedule
    return math.ceil(min(n, cap)), math.ceil(min(in_flight, cap))


def _mean_len(scenario: S.Scenario, role: str) -> float:
    """The mean unscaled length of the workload's input or output."""
    wl = scenario.workload
    if wl.trace is not None:
        trace = load_trace(scenario, wl.trace)
        return _mean(trace.n_in if role == "input" else trace.n_out)
    if wl.pairs is not None:
        pairs = load_pairs(scenario, wl.pairs)
        col = pairs.n_in if role == "input" else pairs.n_out
        return float((col * pairs.count).sum() / max(1, pairs.count.sum()))  # distinct rows, each `count` times
    d = wl.input if role == "input" else wl.output
    assert d is not None
    if isinstance(d, S.FixedLen | S.UniformLen | S.LognormalLen):
        return expected_turns(d)  # the mean of a length distribution, whatever it counts
    return _mean(load_trace(scenario, d.trace).n_in if role == "input" else load_trace(scenario, d.trace).n_out)


def _mean(values: tuple[int, ...]) -> float:
    return sum(values) / len(values) if values else 0.0


def _scaled(mean: float, scale: float, cap: int | None) -> float:
    return min(mean * scale, cap) if cap is not None else mean * scale


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:,.1f} GB"
