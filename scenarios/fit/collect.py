"""Fold a stream of log rows into what a fit needs, in memory that does not grow with the text.

Kept per request: the arrival time (8 bytes) and, for logs with session ids,
the session's key, lengths and latency. Lengths are summed exactly (mean,
min, max, correlation) and a uniform reservoir sample of at most
`max_pairs` (input, output, shared prefix) rows keeps their joint
distribution: exact when the log has fewer rows. Prefix reuse is measured
in file order against every 512-token block hash seen before (up to
`PREFIX_IDS_CAP` distinct hashes; beyond that it stops and says so).
"""

from __future__ import annotations

import math
import random
from array import array
from collections import Counter
from dataclasses import dataclass

import numpy as np

from scenarios.errors import ScenarioError
from scenarios.fit.readers import LogFile, LogRow
from scenarios.fit.timestamps import TimeBasis, TimeKind, TimeUnit, decide_basis
from scenarios.types import PREFIX_BLOCK_TOKENS

PREFIX_IDS_CAP = 5_000_000
MODELS_CAP = 1000


@dataclass(frozen=True)
class LengthSums:
    n: int
    mean_in: float
    mean_out: float
    min_in: int
    max_in: int
    min_out: int
    max_out: int
    corr: float  # Pearson correlation of input and output lengths (exact, over every row)


@dataclass(frozen=True)
class PrefixSums:
    rows: int  # rows that carried prefix hashes
    reused_rows: int  # rows whose prompt started with at least one block seen before
    hit_ratio: float  # share of those rows' prompt tokens in leading blocks seen before (an ideal prefix cache)
    distinct_reused_blocks: int
    complete: bool  # False when tracking stopped at PREFIX_IDS_CAP distinct hashes


@dataclass(frozen=True)
class SessionRows:
    key: np.ndarray  # int64 hash of the session id
    t_s: np.ndarray  # seconds from the log's first request
    n_in: np.ndarray  # -1 where the row has no usage
    n_out: np.ndarray
    latency_s: np.ndarray  # nan where unknown


@dataclass(frozen=True)
class LogData:
    """Everything a fit reads from the logs, with times in seconds from the first request, sorted."""

    t_s: np.ndarray
    t0_epoch_s: float | None  # wall time of the first request when the timestamps were absolute
    basis: TimeBasis
    n_rows: int
    out_of_order: int  # rows earlier than the row before them (sorted before fitting)
    no_usage: int  # rows without token counts: arrivals only
    zero_tokens: int  # rows with 0 input or 0 output tokens (failed or empty): arrivals only
    skipped_model: int  # rows of other models (--model)
    models: dict[str, int]
    lengths: LengthSums
    pairs_in: np.ndarray  # the reservoir: all rows when the log has at most max_pairs
    pairs_out: np.ndarray
    pairs_prefix: tuple[tuple[int, ...], ...]
    prefix: PrefixSums | None
    cached_ratio: float | None  # server-reported cached prompt tokens / prompt tokens, where logged
    sessions: SessionRows | None


class Collector:
    """Feed rows with `add`; `finish` decides the time unit and returns LogData."""

    def __init__(self, *, seed: int = 0, max_pairs: int = 200_000, model: str | None = None) -> None:
        self.max_pairs, self.model = max_pairs, model
        self._t = array("d")
        self._kind: TimeKind | None = None
        self._relative_unit = "s"
        self._max_abs = 0.0
        self._last = -math.inf
        self.n_rows = self.out_of_order = self.no_usage = self.zero_tokens = self.skipped_model = 0
        self.models: Counter[str] = Counter()
        self._n = 0
        self._s = [0.0] * 5  # sum in, sum out, sum in^2, sum out^2, sum in*out
        self._min_in = self._min_out = math.inf
        self._max_in = self._max_out = 0
        self._res_in, self._res_out = array("q"), array("q")
        self._res_prefix: list[tuple[int, ...]] = []
        self._rng = random.Random(seed)
        self._seen: set[int] = set()
        self._canon: dict[int, int] = {}
        self._prefix = [0, 0, 0, 0]  # rows, reused rows, hit tokens, prompt tokens
        self._prefix_complete = True
        self._cached = [0, 0]  # cached tokens, prompt tokens of rows that report them
        self._sk, self._st = array("q"), array("d")
        self._sin, self._sout, self._slat = array("q"), array("q"), array("d")
        self._slat_raw = array("b")  # 1 where latency is in raw time units (end - start)

    def end_file(self, info: LogFile, first: bool) -> None:
        """After a file's rows: the first file's layout sets the unit of relative numeric timestamps."""
        if first:
            self._relative_unit = info.relative_unit

    def add(self, row: LogRow, info: LogFile) -> None:
        if self._kind is None:
            self._kind = row.t_kind
        elif row.t_kind != self._kind:
            raise ScenarioError(f"log {info.path}, line {row.line}: timestamp {row.t!r} is "
                                f"{'ISO text' if row.t_kind == 'iso' else 'a number'} but earlier rows had "
                                f"{'ISO text' if self._kind == 'iso' else 'numbers'}; use one kind of timestamp")
        if self.model is not None:
            if row.model is None:
                raise ScenarioError(f"log {info.path}, line {row.line}: --model {self.model} given but the row has "
                                    "no model field; name it with --field model=NAME or drop --model")
            if row.model != self.model:
                self.skipped_model += 1
                self._count_model(row.model)
                return
        self._count_model(row.model)
        self.n_rows += 1
        if row.t < self._last:
            self.out_of_order += 1
        self._last = row.t
        self._t.append(row.t)
        self._max_abs = max(self._max_abs, abs(row.t))
        if row.n_in is None or row.n_out is None:
            self.no_usage += 1
        elif row.n_in == 0 or row.n_out == 0:
            self.zero_tokens += 1
        else:
            self._add_lengths(row)
        if row.session is not None:
            self._sk.append(hash(row.session))
            self._st.append(row.t)
            self._sin.append(row.n_in if row.n_in is not None else -1)
            self._sout.append(row.n_out if row.n_out is not None else -1)
            self._slat.append(row.latency if row.latency is not None else math.nan)
            self._slat_raw.append(1 if info.latency_from_end else 0)

    def _count_model(self, model: str | None) -> None:
        if model is not None and (model in self.models or len(self.models) < MODELS_CAP):
            self.models[model] += 1

    def _add_lengths(self, row: LogRow) -> None:
        a, b = row.n_in, row.n_out
        assert a is not None and b is not None
        s = self._s
        s[0] += a
        s[1] += b
        s[2] += a * a
        s[3] += b * b
        s[4] += a * b
        self._min_in, self._max_in = min(self._min_in, a), max(self._max_in, a)
        self._min_out, self._max_out = min(self._min_out, b), max(self._max_out, b)
        reused = self._reuse(row.prefix, a) if row.prefix else ()
        if row.cached is not None:
            self._cached[0] += min(row.cached, a)
            self._cached[1] += a
        self._n += 1
        if len(self._res_in) < self.max_pairs:
            self._res_in.append(a)
            self._res_out.append(b)
            self._res_prefix.append(reused)
        else:  # reservoir sampling (algorithm R): every row is kept with the same probability
            j = self._rng.randrange(self._n)
            if j < self.max_pairs:
                self._res_in[j], self._res_out[j], self._res_prefix[j] = a, b, reused

    def _reuse(self, ids: tuple[int, ...], n_in: int) -> tuple[int, ...]:
        """Leading blocks seen before (renumbered), and the bookkeeping for the hit ratio."""
        if not self._prefix_complete:
            return ()
        b = 0
        for h in ids:
            if h not in self._seen:
                break
            b += 1
        b = min(b, n_in // PREFIX_BLOCK_TOKENS)  # whole blocks of this prompt only
        p = self._prefix
        p[0] += 1
        p[1] += b > 0
        p[2] += b * PREFIX_BLOCK_TOKENS
        p[3] += n_in
        self._seen.update(ids)
        if len(self._seen) > PREFIX_IDS_CAP:
            self._prefix_complete = False
            self._seen.clear()
        return tuple(self._canon.setdefault(h, len(self._canon)) for h in ids[:b])

    def finish(self, time_unit: TimeUnit) -> LogData:
        if self.n_rows < 2:
            what = f" of model {self.model}" if self.model else ""
            raise ScenarioError(f"the logs have {self.n_rows} request{'s' if self.n_rows != 1 else ''}{what}; "
                                "a fit needs at least two (and thousands for stable statistics)")
        if self._n == 0:
            raise ScenarioError("no row of the logs has both input and output token counts >= 1; check the "
                                "token fields (--field input=NAME --field output=NAME)")
        assert self._kind is not None
        basis = decide_basis(self._kind, self._max_abs, time_unit, self._relative_unit)
        t = np.frombuffer(self._t, dtype=np.float64)  # a view: sorted in place, no second copy of the times
        t.sort()
        t0 = float(t[0])
        t -= t0
        t *= basis.seconds_per_value
        return LogData(t_s=t, t0_epoch_s=t0 * basis.seconds_per_value if basis.epoch else None, basis=basis,
                       n_rows=self.n_rows, out_of_order=self.out_of_order, no_usage=self.no_usage,
                       zero_tokens=self.zero_tokens, skipped_model=self.skipped_model, models=dict(self.models),
                       lengths=self._length_sums(), pairs_in=np.frombuffer(self._res_in, dtype=np.int64).copy(),
                       pairs_out=np.frombuffer(self._res_out, dtype=np.int64).copy(),
                       pairs_prefix=tuple(self._res_prefix), prefix=self._prefix_sums(),
                       cached_ratio=self._cached[0] / self._cached[1] if self._cached[1] else None,
                       sessions=self._session_rows(t0, basis))

    def _length_sums(self) -> LengthSums:
        n, s = self._n, self._s
        var_in = s[2] / n - (s[0] / n) ** 2
        var_out = s[3] / n - (s[1] / n) ** 2
        cov = s[4] / n - (s[0] / n) * (s[1] / n)
        corr = cov / math.sqrt(var_in * var_out) if var_in > 0 and var_out > 0 else 0.0
        return LengthSums(n, s[0] / n, s[1] / n, int(self._min_in), self._max_in, int(self._min_out), self._max_out,
                          float(corr))

    def _prefix_sums(self) -> PrefixSums | None:
        rows, reused, hit, tokens = self._prefix
        if rows == 0:
            return None
        return PrefixSums(rows, reused, hit / tokens if tokens else 0.0, len(self._canon), self._prefix_complete)

    def _session_rows(self, t0: float, basis: TimeBasis) -> SessionRows | None:
        if not self._sk:
            return None
        spv = basis.seconds_per_value
        lat = np.frombuffer(self._slat, dtype=np.float64).copy()
        raw = np.frombuffer(self._slat_raw, dtype=np.int8).astype(bool)
        lat[raw] *= spv
        return SessionRows(np.frombuffer(self._sk, dtype=np.int64).copy(),
                           (np.frombuffer(self._st, dtype=np.float64) - t0) * spv,
                           np.frombuffer(self._sin, dtype=np.int64).copy(),
                           np.frombuffer(self._sout, dtype=np.int64).copy(), lat)
