"""Observed (input, output) token-length pairs: the file `advisor scenarios fit` writes beside a scenario.

A gzip-compressed CSV, `input_tokens,output_tokens,count,prefix_blocks`, one
row per distinct pair (with how often it was seen), after `#` comment lines
that say where it came from. `prefix_blocks` is empty or space-separated
ids of the 512-token prompt blocks the request shared with earlier ones
(renumbered; no hash or text from the log). A schedule draws whole rows,
so the correlation of input and output lengths and the prefix sharing stay
as they were. Counts only: no prompt or completion text is ever stored.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from scenarios.errors import ScenarioError
from scenarios.files import text_lines

HEADER = "input_tokens,output_tokens,count,prefix_blocks"


@dataclass(frozen=True)
class Pairs:
    n_in: np.ndarray  # int64, one entry per distinct row
    n_out: np.ndarray
    count: np.ndarray  # how often the row was seen (resampling weight)
    prefix: tuple[tuple[int, ...], ...]  # shared prefix block ids per row (empty tuples when none)

    def __len__(self) -> int:
        return len(self.n_in)

    @property
    def n_requests(self) -> int:
        return int(self.count.sum())

    def sample_rows(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Row indices of n requests drawn with replacement, each row as often as it was seen."""
        p = self.count / self.count.sum()
        return rng.choice(len(self), size=n, replace=True, p=p)


def write_pairs(path: Path, pairs: Pairs, comments: list[str]) -> None:
    """Write the pairs file (gzip, deterministic bytes: no time stamp in the gzip header)."""
    lines = [f"# {c}" for c in comments] + [HEADER]
    for i in range(len(pairs)):
        lines.append(f"{pairs.n_in[i]},{pairs.n_out[i]},{pairs.count[i]},{' '.join(map(str, pairs.prefix[i]))}")
    data = ("\n".join(lines) + "\n").encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(data)


def read_pairs(path: str | Path) -> Pairs:
    """Read a pairs file (cached while the file is unchanged); a bad row names its line."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise ScenarioError(f"cannot read pairs file {p}: {e.strerror}; check the path") from None
    return _read_cached(str(p.resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=8)
def _read_cached(path: str, _size: int, _mtime_ns: int) -> Pairs:
    n_in: list[int] = []
    n_out: list[int] = []
    count: list[int] = []
    prefix: list[tuple[int, ...]] = []
    seen_header = False
    for line, text in text_lines(path, "pairs file"):
        if not text.strip() or text.startswith("#"):
            continue
        if not seen_header:
            if text.strip() != HEADER:
                raise ScenarioError(f"pairs file {path}, line {line}: header must be {HEADER}, got {text!r}")
            seen_header = True
            continue
        cols = text.split(",")
        try:
            if len(cols) != 4:
                raise ValueError(f"expected 4 columns, got {len(cols)}")
            a, b, c = int(cols[0]), int(cols[1]), int(cols[2])
            blocks = tuple(int(x) for x in cols[3].split())
            if a < 1 or b < 1 or c < 1 or any(x < 0 for x in blocks):
                raise ValueError("lengths and count must be >= 1 and block ids >= 0")
        except ValueError as e:
            raise ScenarioError(f"pairs file {path}, line {line}: {e}; the file is written by "
                                "`advisor scenarios fit`: fit the log again") from None
        n_in.append(a)
        n_out.append(b)
        count.append(c)
        prefix.append(blocks)
    if not n_in:
        raise ScenarioError(f"pairs file {path} has no rows; fit the log again with `advisor scenarios fit`")
    return Pairs(np.array(n_in, dtype=np.int64), np.array(n_out, dtype=np.int64), np.array(count, dtype=np.int64),
                 tuple(prefix))


def pairs_file_for(scenario_path: Path) -> Path:
    """The pairs file name that goes with a scenario YAML: my-traffic.yaml -> my-traffic.pairs.csv.gz."""
    return scenario_path.with_name(scenario_path.name.removesuffix(scenario_path.suffix) + ".pairs.csv.gz")

