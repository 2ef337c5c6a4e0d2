"""The scenario YAML as a strict pydantic model: unknown keys are errors.

A scenario is workload (length distributions, observed length pairs or a
trace), an arrival process or multi-turn `sessions` (which then drive the
arrivals), duration and warm-up, SLOs, a description of the real use it
stands for, and a `fit` block that shrinks it to the embedded default machine.
This module only validates; `scenarios.schedule` turns a Scenario into a
Schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from scenarios.overrides import Knobs, in_range
from scenarios.slos import SLOs

Pos = Annotated[float, Field(gt=0)]
NonNeg = Annotated[float, Field(ge=0)]
Tokens = Annotated[int, Field(ge=1, le=10_000_000)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TraceRef(_Strict):
    """A trace file: an absolute path, or a name found via $ADVISOR_TRACES or beside the YAML."""

    file: str = Field(min_length=1)
    format: Literal["azure", "mooncake"] | None = None  # default: from the extension (.csv / .jsonl, also .gz)


class PairsRef(_Strict):
    """Observed (input, output) length pairs, resampled together so their correlation is kept.

    The file (written by `advisor scenarios fit`, see `scenarios.pairs`) is found like a trace file.
    """

    file: str = Field(min_length=1)


# ---- token lengths ----------------------------------------------------------------------------

class FixedLen(_Strict):
    dist: Literal["fixed"]
    value: Tokens


class UniformLen(_Strict):
    dist: Literal["uniform"]
    min: Tokens
    max: Tokens

    @model_validator(mode="after")
    def _order(self) -> UniformLen:
        if self.min > self.max:
            raise ValueError(f"uniform needs min <= max, got min={self.min}, max={self.max}")
        return self


class LognormalLen(_Strict):
    """Lognormal with this median whose mean, after clipping to [min, max], is `mean`."""

    dist: Literal["lognormal"]
    mean: Pos
    median: Pos
    min: Tokens = 1
    max: Tokens | None = None

    @model_validator(mode="after")
    def _order(self) -> LognormalLen:
        if self.mean < self.median:
            raise ValueError(f"lognormal needs mean >= median, got mean={self.mean}, median={self.median}")
        hi = self.max if self.max is not None else float("inf")
        if not self.min <= self.median <= hi:
            raise ValueError(f"lognormal needs min <= median <= max, got {self.min} <= {self.median} <= {self.max}")
        return self


class EmpiricalLen(_Strict):
    """Resample the matching column (input or output length) of a trace."""

    dist: Literal["empirical"]
    trace: TraceRef


LengthSpec = Annotated[FixedLen | UniformLen | LognormalLen | EmpiricalLen, Field(discriminator="dist")]


class EmbedLoad(_Strict):
    """What one `embed` request carries: `inputs_per_request` texts, each a chunk of `chunk_words` words of the
    shipped corpus (`scenarios.corpus`); tokens are counted by the engine's own tokenizer."""

    inputs_per_request: Annotated[int, Field(ge=1, le=4096)]
    chunk_words: Annotated[int, Field(ge=1, le=4096)]


class RerankLoad(_Strict):
    """What one `rerank` request carries: a query of `query_words` words and `passages_per_request` passages of
    `passage_words` words each, all chunks of the shipped corpus (`scenarios.corpus`)."""

    passages_per_request: Annotated[int, Field(ge=1, le=4096)]
    query_words: Annotated[int, Field(ge=1, le=4096)]
    passage_words: Annotated[int, Field(ge=1, le=4096)]


class RagLoad(_Strict):
    """What one `rag` request does: a query of `query_words` words (a chunk of the shipped corpus) is embedded,
    the `top_k` nearest of the corpus cut into `passage_words`-word passages are found, the best
    `context_passages` of them (after the rerank stage, when there is one) go into the prompt, and the answer
    is `answer_tokens` tokens long. `embed_engine`, `rerank_engine` (`none`: no rerank stage) and
    `generate_engine` name each stage's engine; the command's flags override them."""

    query_words: Annotated[int, Field(ge=1, le=512)]
    passage_words: Annotated[int, Field(ge=1, le=4096)]
    top_k: Annotated[int, Field(ge=1, le=1000)]
    context_passages: Annotated[int, Field(ge=1, le=100)]
    answer_tokens: Annotated[int, Field(ge=1, le=65536)]
    embed_engine: str = "sentence-transformers"
    rerank_engine: str = "none"
    generate_engine: str | None = None  # None: advisor's built-in engine (adapters.BUILTIN_ENGINE)

    @model_validator(mode="after")
    def _fits(self) -> RagLoad:
        if self.context_passages > self.top_k:
            raise ValueError(f"context_passages ({self.context_passages}) cannot exceed top_k ({self.top_k}): the "
                             "prompt takes passages from the search's top_k")
        return self


class Workload(_Strict):
    """The task (`generate`, the default, `embed`, `rerank` or `rag`) and its load.

    `generate`: one of `input` and `output` length distributions, `pairs` (observed length pairs resampled
    jointly, with their shared prefix blocks), or a `trace` (lengths and prefixes row by row, in order).
    `embed`: an `embed` block (inputs per request, words per input) and nothing else; `rerank`: a `rerank`
    block (passages per request, words per query and per passage) and nothing else; `rag`: a `rag` block
    (the pipeline's query, index, context and answer sizes, and each stage's engine) and nothing else.
    """

    task: Literal["generate", "embed", "rerank", "rag"] = "generate"
    embed: EmbedLoad | None = None
    rerank: RerankLoad | None = None
    rag: RagLoad | None = None
    input: LengthSpec | None = None
    output: LengthSpec | None = None
    # lognormal input and output drawn with this correlation of their logarithms (0: independent)
    log_correlation: Annotated[float, Field(ge=-1, le=1)] | None = None
    pairs: PairsRef | None = None
    trace: TraceRef | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Workload:
        blocks = {"embed": "inputs_per_request, chunk_words", "rerank": "passages_per_request, query_words, "
                  "passage_words", "rag": "query_words, passage_words, top_k, context_passages, answer_tokens"}
        for task, keys in sorted(blocks.items(), key=lambda kv: kv[0] != self.task):  # its own block first
            if self.task == task:
                given = [k for k in ("input", "output", "log_correlation", "pairs", "trace", *blocks)
                         if k != task and getattr(self, k) is not None]
                if getattr(self, task) is None or given:
                    raise ValueError(f"an `{task}` workload takes an `{task}` block ({keys}) and no "
                                     f"{', '.join(given) or 'lengths'}")
                return self
            if getattr(self, task) is not None:
                raise ValueError(f"an `{task}` block needs `task: {task}` (the default task is generate)")
        has_dists = self.input is not None or self.output is not None
        kinds = [k for k, given in (("input/output", has_dists), ("pairs", self.pairs is not None),
                                    ("trace", self.trace is not None)) if given]
        if len(kinds) > 1:
            raise ValueError(f"give one of `input`/`output` distributions, `pairs` or `trace`, not {' and '.join(kinds)}")
        if not kinds or (has_dists and (self.input is None or self.output is None)):
            raise ValueError("give both `input` and `output` length distributions, or `pairs`, or a `trace`")
        if self.log_correlation is not None and not (isinstance(self.input, LognormalLen)
                                                     and isinstance(self.output, LognormalLen)):
            raise ValueError("`log_correlation` needs lognormal `input` and `output` distributions")
        return self


# ---- arrival processes ------------------------------------------------------------------------

class ConstantArrival(_Strict):
    process: Literal["constant"]
    rate_rps: Pos


class PoissonArrival(_Strict):
    process: Literal["poisson"]
    rate_rps: Pos


class GammaArrival(_Strict):
    process: Literal["gamma"]
    rate_rps: Pos
    cv: Annotated[float, Field(ge=0, le=100)]  # inter-arrival coefficient of variation; 1 = Poisson


class OnOffArrival(_Strict):
    process: Literal["onoff"]
    on_rate_rps: Pos  # rate inside a burst
    on_cv: Annotated[float, Field(ge=0, le=100)] = 1.0  # gap CV inside a burst
    on_s: Pos  # mean burst length
    off_s: NonNeg  # mean idle length
    phase_cv: Annotated[float, Field(ge=0, le=10)] = 0.3  # CV of burst lengths (and of idle lengths unless off_cv)
    off_cv: Annotated[float, Field(ge=0, le=10)] | None = None  # CV of idle lengths; default: phase_cv


class BatchedArrival(_Strict):
    """Groups of simultaneous requests: `batch_size` requests (mean) at once, one group every `period_s` (mean).

    Group sizes are 1 + a rounded gamma (mean `batch_size`, CV `size_cv`; 0: every group the same size);
    periods are gamma (CV `period_cv`; 0: regular). Mean rate = batch_size / period_s.
    """

    process: Literal["batched"]
    batch_size: Annotated[float, Field(ge=1, le=100_000)]
    period_s: Pos
    size_cv: Annotated[float, Field(ge=0, le=10)] = 0.0
    period_cv: Annotated[float, Field(ge=0, le=10)] = 0.0

    @property
    def mean_rate_rps(self) -> float:
        return self.batch_size / self.period_s


class ClosedArrival(_Strict):
    process: Literal["closed"]
    concurrency: Annotated[int, Field(ge=1, le=100_000)]
    think_s: NonNeg  # mean pause between a user's answer and its next request
    think_cv: Annotated[float, Field(ge=0, le=10)] = 1.0
    requests_per_user: Annotated[int, Field(ge=1)]  # at the scenario's warmup_s + duration_s


class OfflineArrival(_Strict):
    process: Literal["offline"]
    requests: Annotated[int, Field(ge=1, le=10_000_000)]


class ProfileArrival(_Strict):
    """A rate curve over time, such as a day of traffic: `rates_rps[i]` holds for `step_s` seconds.

    Gaps are gamma with coefficient of variation `cv` once the curve is divided out (time rescaling).
    A run shorter than the curve compresses it in time (rates kept); a longer one repeats it.
    """

    process: Literal["profile"]
    step_s: Pos
    rates_rps: Annotated[tuple[NonNeg, ...], Field(min_length=1, max_length=100_000)]
    cv: Annotated[float, Field(ge=0, le=100)] = 1.0

    @model_validator(mode="after")
    def _some_traffic(self) -> ProfileArrival:
        if max(self.rates_rps) <= 0:
            raise ValueError("a profile needs at least one rate > 0")
        return self

    @property
    def span_s(self) -> float:
        return self.step_s * len(self.rates_rps)

    @property
    def mean_rate_rps(self) -> float:
        return sum(self.rates_rps) / len(self.rates_rps)


class TraceArrival(_Strict):
    """Replay the workload trace's own timestamps."""

    process: Literal["trace"]
    speed: Pos = 1.0  # > 1 replays faster
    start_s: NonNeg = 0.0  # skip this much of the trace


ArrivalSpec = Annotated[ConstantArrival | PoissonArrival | GammaArrival | OnOffArrival | BatchedArrival
                        | ProfileArrival | ClosedArrival | OfflineArrival | TraceArrival, Field(discriminator="process")]


# ---- multi-turn sessions --------------------------------------------------------------------------

class SessionSpec(_Strict):
    """Multi-turn conversations: how many, how long, and the pause between an answer and the next message.

    Turn 1's prompt is a message of `first_tokens`; turn k's prompt is turn k-1's prompt + the answer the
    engine really gave + a new message of `new_tokens` (both default to the workload's input lengths);
    answers are the workload's output lengths. Sessions start at `rate_rps` new sessions per second (open
    loop, gamma gaps of CV `cv`) or `users` run `sessions_per_user` sessions each back to back (closed
    loop). Each turn goes a think time (gamma, mean `think_s`, CV `think_cv`) after the previous answer
    ended. A session block drives the arrivals: a scenario has either `arrival` or `sessions`.
    See docs/scenarios.md, "Multi-turn sessions".
    """

    rate_rps: Pos | None = None  # new sessions per second (open loop)
    users: Annotated[int, Field(ge=1, le=100_000)] | None = None  # or: concurrent users, one session at a time
    sessions_per_user: Annotated[int, Field(ge=1)] | None = None  # closed loop, at the scenario's own window
    cv: Annotated[float, Field(ge=0, le=100)] = 1.0  # gap CV of session starts (open loop; 1 = Poisson)
    turns: LengthSpec  # turns per session (a count >= 1)
    think_s: NonNeg  # mean pause between an answer and the user's next message
    think_cv: Annotated[float, Field(ge=0, le=100)] = 1.0
    first_tokens: LengthSpec | None = None  # turn 1's message; default: the workload's input lengths
    new_tokens: LengthSpec | None = None  # what the user adds per later turn; default: the workload's input lengths
    max_context_tokens: Tokens | None = None  # keep prompt + answer within this (the model's context also applies)

    @model_validator(mode="after")
    def _one_driver(self) -> SessionSpec:
        if (self.rate_rps is None) == (self.users is None):
            raise ValueError("sessions need exactly one of `rate_rps` (new sessions per second) or `users`")
        if self.users is not None and self.sessions_per_user is None:
            raise ValueError("closed-loop sessions (`users`) need `sessions_per_user` (sessions each user runs)")
        if self.rate_rps is not None and self.sessions_per_user is not None:
            raise ValueError("`sessions_per_user` is for closed-loop sessions (`users`); open-loop sessions have "
                             "`rate_rps`")
        for name in ("turns", "first_tokens", "new_tokens"):
            if isinstance(getattr(self, name), EmpiricalLen):
                raise ValueError(f"sessions.{name} takes fixed, uniform or lognormal, not empirical")
        return self

    @property
    def closed(self) -> bool:
        return self.users is not None


# ---- SLOs, fit, scenario ------------------------------------------------------------------------

@dataclass(frozen=True)
class Fit(Knobs):
    """Defaults that fit the scenario to the embedded default machine (2-core CPU, `tiny` model).

    The same settings as the command-line overrides (`Knobs`, validated once in scenarios/overrides.py);
    `arrival` replaces the arrival process (e.g. drop minute-long idle gaps that a short run cannot show),
    `sessions` the sessions block (e.g. shorter think times, so a short run holds whole conversations).
    """

    __pydantic_config__ = ConfigDict(extra="forbid", allow_inf_nan=False)
    arrival: ArrivalSpec | None = None
    sessions: SessionSpec | None = None


class Scenario(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    description: str = Field(min_length=20)  # one paragraph: the real use it stands for
    source: str = ""  # credit for the data it was calibrated on
    workload: Workload
    arrival: ArrivalSpec | None = None  # required unless `sessions` drives the arrivals
    duration_s: NonNeg = 60.0  # measurement window (open and closed loop); offline: unused
    warmup_s: NonNeg = 0.0
    slos: SLOs = SLOs()  # one type for the YAML block and the schedule (scenarios/types.py checks it)
    sessions: SessionSpec | None = None
    fit: Fit = Fit()
    _base_dir: Path | None = PrivateAttr(default=None)  # folder of the YAML, for relative trace files

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        self._sessions_consistent()
        arrivals = [self.arrival] + ([self.fit.arrival] if self.fit.arrival is not None else [])
        for a in arrivals:
            if isinstance(a, TraceArrival) and self.workload.trace is None:
                raise ValueError("arrival `process: trace` replays the workload trace: add `workload.trace`")
        closed = isinstance(self.arrival, OfflineArrival | ClosedArrival) or (
            self.sessions is not None and self.sessions.closed)
        if not closed and self.duration_s <= 0:
            raise ValueError(f"duration_s must be > 0 for an open-loop scenario, got {self.duration_s}")
        for name in ("duration_s", "warmup_s"):  # the same valid ranges as the command line's
            if getattr(self, name) > 0 or name == "warmup_s":
                in_range(name, name, getattr(self, name))
        return self

    def _sessions_consistent(self) -> None:
        if self.workload.task != "generate" and (self.sessions is not None or isinstance(self.arrival, ClosedArrival)):
            raise ValueError(f"an `{self.workload.task}` scenario takes an open-loop or offline `arrival`, not sessions "
                             "or closed loop")
        if self.sessions is None:
            if self.arrival is None:
                raise ValueError("give an `arrival` process, or a `sessions` block (multi-turn conversations)")
            if self.fit.sessions is not None:
                raise ValueError("fit.sessions replaces the scenario's `sessions` block, and there is none")
            return
        if self.arrival is not None:
            raise ValueError("a `sessions` block drives the arrivals (sessions start at its `rate_rps`, or its "
                             "`users` run them): remove `arrival`")
        if self.fit.arrival is not None:
            raise ValueError("fit.arrival does not apply to a sessions scenario: give fit.sessions")
        if self.workload.trace is not None:
            raise ValueError("`sessions` build conversations from length distributions or pairs, not a `trace`")

    @property
    def base_dir(self) -> Path | None:
        return self._base_dir

    def with_base_dir(self, base_dir: Path | None) -> Scenario:
        """A copy that resolves relative trace files against `base_dir`."""
        s = self.model_copy()
        s._base_dir = base_dir
        return s
