"""A `rag` scenario + seed + overrides -> its schedule: when each user question goes out, and its text.

The arrival times come from the same settings and processes as every other schedule (`resolve`,
`draw_times`); each question is a `query_words`-word chunk of the shipped corpus (`scenarios.corpus`),
picked by a numpy Generator seeded from (seed, stream), so the same inputs give the same schedule. The
passages the pipeline searches are the same corpus cut into `passage_words`-word chunks
(`passages`). RAG scenarios are shipped in `scenarios/rag/`, apart from the generation and embed ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scenarios import spec as S
from scenarios.arrival_times import draw_times
from scenarios.catalog import load_scenario
from scenarios.corpus import chunks
from scenarios.errors import ScenarioError
from scenarios.overrides import Overrides
from scenarios.schedule import MAX_SCHEDULE_REQUESTS, resolve
from scenarios.settings import Settings
from scenarios.slos import SLOs

RAG_DIR = Path(__file__).resolve().parent / "rag"
_ARRIVAL, _QUERIES = 0, 6  # random streams per seed (6: apart from the generation and embed schedules' 0-5)


@dataclass(frozen=True, slots=True)
class RagPlanned:
    """One scheduled question: its send offset from the run's start and its text."""

    t_s: float
    query: str
    warmup: bool  # sent before the measurement window opens; not measured


@dataclass(frozen=True)
class RagSchedule:
    scenario: str
    settings: Settings
    slos: SLOs
    load: S.RagLoad
    requests: tuple[RagPlanned, ...]

    @property
    def measured(self) -> tuple[RagPlanned, ...]:
        return tuple(r for r in self.requests if not r.warmup)


def rag_scenario_names() -> list[str]:
    """Names of the shipped rag scenarios, sorted."""
    return sorted(p.stem for p in RAG_DIR.glob("*.yaml"))


def load_rag_scenario(name_or_path: str) -> S.Scenario:
    """A shipped rag scenario by name, or a YAML file by path; any other task is refused in one line."""
    shipped = RAG_DIR / f"{name_or_path}.yaml"
    scenario = load_scenario(shipped if shipped.is_file() else name_or_path)
    if scenario.workload.task != "rag":
        raise ScenarioError(f"scenario '{scenario.name}' is a {scenario.workload.task} scenario, not rag; choose one "
                            f"of {', '.join(rag_scenario_names())} or a YAML file with `task: rag`")
    return scenario


def passages(load: S.RagLoad) -> tuple[str, ...]:
    """The passages the pipeline's vector index holds: the whole corpus in `passage_words`-word chunks."""
    return chunks(load.passage_words)


def build_rag_schedule(scenario: S.Scenario, seed: int = 0, overrides: Overrides | None = None) -> RagSchedule:
    """The deterministic schedule of a rag scenario."""
    w = scenario.workload
    assert w.task == "rag" and w.rag is not None, scenario.name
    st = resolve(scenario, overrides, seed)
    a = st.arrival
    assert a is not None and not isinstance(a, S.ClosedArrival), a  # refused by the schema
    limit = min(st.max_requests or MAX_SCHEDULE_REQUESTS + 1, MAX_SCHEDULE_REQUESTS + 1)
    if isinstance(a, S.OfflineArrival):
        times = [0.0] * min(a.requests, limit)
    else:
        times, _ = draw_times(a, np.random.default_rng([st.seed, _ARRIVAL]), st.warmup_s + st.duration_s, limit)
    if len(times) > MAX_SCHEDULE_REQUESTS:
        raise ScenarioError(f"scenario '{scenario.name}' would send over {MAX_SCHEDULE_REQUESTS:,} requests; "
                            "lower --rate or --duration, or give --max-requests")
    pool = chunks(w.rag.query_words)
    picks = np.random.default_rng([st.seed, _QUERIES]).integers(0, len(pool), len(times))
    reqs = tuple(RagPlanned(t, pool[i], t < st.warmup_s) for t, i in zip(times, picks))
    return RagSchedule(scenario.name, st, scenario.slos, w.rag, reqs)
