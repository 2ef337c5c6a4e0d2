"""Scenario + seed + overrides -> Schedule, as a pure function.

`resolve()` settles the effective settings (the scenario, then its `fit`
block unless `full_scale`, then the user's overrides, which always win);
`build_schedule()` draws arrival times and token lengths from numpy
Generators seeded from (seed, stream), so the same inputs give the same
Schedule and request i's lengths do not change when only the rate does.
"""

from __future__ import annotations

import math

import numpy as np

from scenarios import spec as S
from scenarios.arrival_times import draw_times
from scenarios.arrivals import ClosedLoop
from scenarios.errors import ScenarioError
from scenarios.lengths import Empirical, Fixed, LengthDist, Lognormal, Uniform, apply_scale_cap
from scenarios.overrides import Overrides, flag
from scenarios.pairs import Pairs, read_pairs
from scenarios.sessions import build_sessions, expected_turns
from scenarios.settings import Settings
from scenarios.trace_files import Trace, find_trace, read_trace
from scenarios.types import PREFIX_BLOCK_TOKENS, Schedule, ScheduledRequest

__all__ = ["Overrides", "Settings", "resolve", "build_schedule", "load_trace", "load_pairs", "MAX_SCHEDULE_REQUESTS"]

MAX_SCHEDULE_REQUESTS = 1_000_000  # a guard against a typo like --rate 1e6
_ARRIVAL, _INPUT, _OUTPUT, _THINK = 0, 1, 2, 3  # independent random streams per seed


def load_trace(scenario: S.Scenario, ref: S.TraceRef) -> Trace:
    """Read a trace named by the scenario (found via $ADVISOR_TRACES or beside the YAML)."""
    return read_trace(find_trace(ref.file, scenario.base_dir), ref.format)


def load_pairs(scenario: S.Scenario, ref: S.PairsRef) -> Pairs:
    """Read the length-pairs file named by the scenario (found like a trace file, usually beside the YAML)."""
    return read_pairs(find_trace(ref.file, scenario.base_dir))


def _dur(s: float) -> str:
    return f"{s / 3600:.3g} h" if s >= 7200 else f"{s / 60:.3g} min" if s >= 120 else f"{s:.3g} s"


def _pick(name: str, scenario_value, fit: S.Fit | None, ov: Overrides):
    """User override, else fit value (unless full scale), else the scenario's own."""
    if getattr(ov, name, None) is not None:
        return getattr(ov, name)
    if fit is not None and getattr(fit, name, None) is not None:
        return getattr(fit, name)
    return scenario_value


def _source(name: str, ov: Overrides) -> str:
    return flag(name) if getattr(ov, name, None) is not None else f"the scenario's fit.{name}"


def resolve(scenario: S.Scenario, overrides: Overrides | None = None, seed: int = 0) -> Settings:
    """Effective settings: scenario, then `fit` (unless full_scale), then overrides."""
    ov = overrides or Overrides()
    fit = None if ov.full_scale else scenario.fit
    if scenario.sessions is not None:
        return _resolve_sessions(scenario, scenario.sessions, fit, ov, seed)
    arrival = fit.arrival if fit is not None and fit.arrival is not None else scenario.arrival
    duration_s = _pick("duration_s", scenario.duration_s, fit, ov)
    warmup_s = _pick("warmup_s", scenario.warmup_s, fit, ov)
    rate = _pick("rate_rps", None, fit, ov)
    concurrency = _pick("concurrency", None, fit, ov)
    process = arrival.process
    if rate is not None:
        if isinstance(arrival, S.ClosedArrival | S.OfflineArrival):
            raise ScenarioError(f"{_source('rate_rps', ov)} does not apply to the {process} scenario "
                                f"'{scenario.name}'; use --concurrency (closed) or --max-requests (offline)")
        arrival = _with_rate(scenario, arrival, rate)
    if concurrency is not None:
        if not isinstance(arrival, S.ClosedArrival):
            raise ScenarioError(f"{_source('concurrency', ov)} applies only to closed-loop scenarios; "
                                f"'{scenario.name}' is {process}: use --rate instead")
        arrival = arrival.model_copy(update={"concurrency": concurrency})
    if isinstance(arrival, S.OfflineArrival):
        if ov.duration_s is not None or ov.warmup_s is not None:
            raise ScenarioError(f"--duration/--warmup do not apply to the offline scenario '{scenario.name}' "
                                "(everything is sent at t=0); use --max-requests")
        duration_s, warmup_s = 0.0, 0.0
    if isinstance(arrival, S.ClosedArrival):  # requests_per_user is given for the scenario's own window
        per_user = _per_window(arrival.requests_per_user, scenario, warmup_s, duration_s)
        arrival = arrival.model_copy(update={"requests_per_user": per_user})
    notes: list[str] = []
    if isinstance(arrival, S.ProfileArrival) and warmup_s + duration_s > 0:
        window, span = warmup_s + duration_s, arrival.span_s
        if window < span * (1 - 1e-9):
            arrival = arrival.model_copy(update={"step_s": arrival.step_s * window / span})
            notes.append(f"the {_dur(span)} rate profile is compressed {span / window:.3g}x in time to fit the "
                         f"{_dur(window)} run (rates as in the profile); give --duration {span - warmup_s:g} "
                         "to run it in real time")
        elif window > span * (1 + 1e-9):
            notes.append(f"the {_dur(span)} rate profile repeats {window / span:.3g} times in the {_dur(window)} run")
    if isinstance(arrival, S.ClosedArrival | S.OfflineArrival):
        target = None
    elif isinstance(arrival, S.TraceArrival):
        target = load_trace(scenario, scenario.workload.trace).rate_rps * arrival.speed
    else:
        target = _mean_rate(arrival)
    return Settings(arrival=arrival, duration_s=float(duration_s), warmup_s=float(warmup_s), target_rps=target,
                    notes=tuple(notes), **_caps(fit, ov, seed))


def _resolve_sessions(scenario: S.Scenario, sess: S.SessionSpec, fit: S.Fit | None, ov: Overrides,
                      seed: int) -> Settings:
    """Multi-turn sessions: --rate is turns (requests) per second, so sessions start at rate / mean turns;
    --concurrency is the number of users (closed loop), whose sessions_per_user scale with the window."""
    if fit is not None and fit.sessions is not None:
        sess = fit.sessions
    duration_s = _pick("duration_s", scenario.duration_s, fit, ov)
    warmup_s = _pick("warmup_s", scenario.warmup_s, fit, ov)
    rate = _pick("rate_rps", None, fit, ov)
    concurrency = _pick("concurrency", None, fit, ov)
    mean_turns = expected_turns(sess.turns)
    kind = "closed-loop (`users`)" if sess.closed else "open-loop (`rate_rps`)"
    if rate is not None:
        if sess.closed:
            raise ScenarioError(f"{_source('rate_rps', ov)} does not apply to the {kind} sessions of "
                                f"'{scenario.name}'; use --concurrency (users)")
        sess = sess.model_copy(update={"rate_rps": rate / mean_turns})
    if concurrency is not None:
        if not sess.closed:
            raise ScenarioError(f"{_source('concurrency', ov)} applies only to closed-loop sessions; "
                                f"'{scenario.name}' has {kind} sessions: use --rate instead")
        sess = sess.model_copy(update={"users": concurrency})
    if sess.closed:  # sessions_per_user is given for the scenario's own window
        assert sess.sessions_per_user is not None
        per_user = _per_window(sess.sessions_per_user, scenario, warmup_s, duration_s)
        sess = sess.model_copy(update={"sessions_per_user": per_user})
    target = None if sess.closed else (sess.rate_rps or 0.0) * mean_turns  # turns (requests) per second
    return Settings(arrival=None, duration_s=float(duration_s), warmup_s=float(warmup_s), target_rps=target,
                    sessions=sess, **_caps(fit, ov, seed))


def _caps(fit: S.Fit | None, ov: Overrides, seed: int) -> dict:
    """The settings every run resolves alike: seed, request cap, length scale and caps, fitted or not."""
    return {"seed": ov.seed if ov.seed is not None else seed,
            "max_requests": _pick("max_requests", None, fit, ov),
            "length_scale": float(_pick("length_scale", 1.0, fit, ov)),
            "max_input_tokens": _pick("max_input_tokens", None, fit, ov),
            "max_output_tokens": _pick("max_output_tokens", None, fit, ov),
            "fitted": fit is not None}


def _per_window(count: int, scenario: S.Scenario, warmup_s: float, duration_s: float) -> int:
    """A per-user count given for the scenario's own window, scaled to the window that will run."""
    base_window = scenario.warmup_s + scenario.duration_s
    return max(1, round(count * (warmup_s + duration_s) / base_window)) if base_window > 0 else count


def _mean_rate(a: S.ArrivalSpec) -> float:
    if isinstance(a, S.OnOffArrival):
        return a.on_rate_rps * a.on_s / (a.on_s + a.off_s)
    if isinstance(a, S.ProfileArrival | S.BatchedArrival):
        return a.mean_rate_rps
    assert isinstance(a, S.ConstantArrival | S.PoissonArrival | S.GammaArrival), a
    return a.rate_rps


def _with_rate(scenario: S.Scenario, a: S.ArrivalSpec, rate: float) -> S.ArrivalSpec:
    """The same process at a new mean rate (shape and burst timing kept; a trace is sped up or slowed)."""
    if isinstance(a, S.OnOffArrival):
        return a.model_copy(update={"on_rate_rps": a.on_rate_rps * rate / _mean_rate(a)})
    if isinstance(a, S.ProfileArrival):  # the curve keeps its shape, scaled to the new mean
        k = rate / a.mean_rate_rps
        return a.model_copy(update={"rates_rps": tuple(r * k for r in a.rates_rps)})
    if isinstance(a, S.BatchedArrival):  # groups keep their size and come more or less often
        return a.model_copy(update={"period_s": a.batch_size / rate})
    if isinstance(a, S.TraceArrival):
        trace_rate = load_trace(scenario, scenario.workload.trace).rate_rps
        if trace_rate <= 0:
            raise ScenarioError(f"the trace of '{scenario.name}' has no duration, so --rate cannot scale it")
        return a.model_copy(update={"speed": rate / trace_rate})
    return a.model_copy(update={"rate_rps": rate})


def _arrival_times(scenario: S.Scenario, st: Settings, rng: np.random.Generator) -> tuple[list[float], list[int]]:
    """Arrival offsets (open loop / offline) and, for trace replay, the trace row of each."""
    a = st.arrival
    limit = min(st.max_requests or MAX_SCHEDULE_REQUESTS + 1, MAX_SCHEDULE_REQUESTS + 1)
    if isinstance(a, S.OfflineArrival):
        return [0.0] * min(a.requests, limit), []
    assert a is not None and not isinstance(a, S.ClosedArrival), a
    trace = load_trace(scenario, scenario.workload.trace) if isinstance(a, S.TraceArrival) else None
    return draw_times(a, rng, st.warmup_s + st.duration_s, limit, trace)


def _length_dist(scenario: S.Scenario, d: S.LengthSpec, role: str) -> LengthDist:
    if isinstance(d, S.FixedLen):
        return Fixed(d.value)
    if isinstance(d, S.UniformLen):
        return Uniform(d.min, d.max)
    if isinstance(d, S.LognormalLen):
        return Lognormal(d.mean, d.median, d.min, d.max)
    trace = load_trace(scenario, d.trace)
    return Empirical(trace.n_in if role == "input" else trace.n_out)


def _draw_lengths(scenario: S.Scenario, n: int, rng_in: np.random.Generator, rng_out: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, ...]]]:
    """n (input, output) lengths of a distribution or pairs workload, and the prefix blocks of pairs (or [])."""
    wl = scenario.workload
    if wl.pairs is not None:  # whole observed rows: input, output and shared prefix blocks together
        pairs = load_pairs(scenario, wl.pairs)
        picked = pairs.sample_rows(rng_in, n)
        return pairs.n_in[picked], pairs.n_out[picked], [pairs.prefix[r] for r in picked] if any(pairs.prefix) else []
    assert wl.input is not None and wl.output is not None
    if wl.log_correlation is not None:  # lognormal lengths whose logarithms are correlated
        d_in, d_out = _length_dist(scenario, wl.input, "input"), _length_dist(scenario, wl.output, "output")
        assert isinstance(d_in, Lognormal) and isinstance(d_out, Lognormal)
        z_in = rng_in.standard_normal(n)
        z_out = wl.log_correlation * z_in + math.sqrt(1 - wl.log_correlation ** 2) * rng_out.standard_normal(n)
        return d_in.from_normal(z_in), d_out.from_normal(z_out), []
    return (_length_dist(scenario, wl.input, "input").sample(rng_in, n),
            _length_dist(scenario, wl.output, "output").sample(rng_out, n), [])


def _check_size(scenario: S.Scenario, n: int) -> None:
    if n > MAX_SCHEDULE_REQUESTS:
        raise ScenarioError(f"scenario '{scenario.name}' would schedule more than {MAX_SCHEDULE_REQUESTS:,} "
                            "requests; lower --rate, --duration or --concurrency, or set --max-requests")


def build_schedule(scenario: S.Scenario, seed: int = 0, overrides: Overrides | None = None) -> Schedule:
    """The deterministic request schedule for (scenario, seed, overrides)."""
    if scenario.workload.task != "generate":
        raise ScenarioError(f"scenario '{scenario.name}' is an {scenario.workload.task} scenario: run it with "
                            f"`advisor {'rag' if scenario.workload.task == 'rag' else 'embed'} --scenario {scenario.name}`")
    st = resolve(scenario, overrides, seed)
    if st.sessions is not None:
        return _session_schedule(scenario, st, overrides)
    assert st.arrival is not None
    rng = {k: np.random.default_rng([st.seed, k]) for k in (_ARRIVAL, _INPUT, _OUTPUT, _THINK)}
    thinks: list[float] = []
    concurrency = None
    if isinstance(st.arrival, S.ClosedArrival):
        a = st.arrival
        concurrency = a.concurrency
        n = min(a.concurrency * a.requests_per_user, st.max_requests or MAX_SCHEDULE_REQUESTS + 1)
        _check_size(scenario, n)
        users = ClosedLoop(a.concurrency, a.think_s, a.think_cv, rng[_THINK])
        thinks = [users.next_think_s() for _ in range(n)]
        times, rows = [0.0] * n, []
        warm_rounds = math.ceil(a.requests_per_user * st.warmup_s / (st.warmup_s + st.duration_s)) \
            if st.warmup_s > 0 else 0
        warm = [i < warm_rounds * a.concurrency for i in range(n)]
    else:
        if st.target_rps is not None and st.max_requests is None:  # refuse before drawing millions of gaps
            _check_size(scenario, int(st.target_rps * (st.warmup_s + st.duration_s)))
        times, rows = _arrival_times(scenario, st, rng[_ARRIVAL])
        n = len(times)
        warm = [t < st.warmup_s for t in times]
    _check_size(scenario, n)

    wl = scenario.workload
    hashes: list[tuple[int, ...]] = []
    if wl.trace is not None:
        trace = load_trace(scenario, wl.trace)
        rows = rows or [i % len(trace) for i in range(n)]
        n_in = np.array([trace.n_in[r] for r in rows], dtype=np.int64)
        n_out = np.array([trace.n_out[r] for r in rows], dtype=np.int64)
        hashes = [trace.hash_ids[r] for r in rows]
    else:
        n_in, n_out, hashes = _draw_lengths(scenario, n, rng[_INPUT], rng[_OUTPUT])
    n_in = apply_scale_cap(n_in, st.length_scale, st.max_input_tokens)
    n_out = apply_scale_cap(n_out, st.length_scale, st.max_output_tokens)

    reqs = tuple(
        ScheduledRequest(idx=i, t_sched_s=float(times[i]), n_in=int(n_in[i]), n_out=int(n_out[i]),
                         # only whole 512-token blocks that still fit the (scaled) prompt are shared
                         prefix_blocks=hashes[i][: int(n_in[i]) // PREFIX_BLOCK_TOKENS] if hashes else (),
                         think_s=thinks[i] if thinks else 0.0, warmup=warm[i])
        for i in range(n))
    return Schedule(scenario=scenario.name, mode=st.mode, requests=reqs, seed=st.seed,  # type: ignore[arg-type]
                    slos=scenario.slos, warmup_s=st.warmup_s, duration_s=st.duration_s,
                    concurrency=concurrency, overrides=overrides or Overrides(), settings=st)


def _session_schedule(scenario: S.Scenario, st: Settings, overrides: Overrides | None) -> Schedule:
    sess = st.sessions
    assert sess is not None
    if not sess.closed and st.max_requests is None:  # refuse before drawing millions of sessions
        _check_size(scenario, int((st.target_rps or 0.0) * (st.warmup_s + st.duration_s)))
    reqs, plan = build_sessions(scenario, sess, seed=st.seed, warmup_s=st.warmup_s, duration_s=st.duration_s,
                                max_requests=st.max_requests, length_scale=st.length_scale,
                                max_input_tokens=st.max_input_tokens, max_output_tokens=st.max_output_tokens,
                                max_total=MAX_SCHEDULE_REQUESTS,
                                lengths=lambda n, r_in, r_out: _draw_lengths(scenario, n, r_in, r_out)[:2])
    return Schedule(scenario=scenario.name, mode=st.mode, requests=reqs, seed=st.seed,  # type: ignore[arg-type]
                    slos=scenario.slos, warmup_s=st.warmup_s, duration_s=st.duration_s,
                    concurrency=sess.users, overrides=overrides or Overrides(), settings=st,
                    sessions=plan)

