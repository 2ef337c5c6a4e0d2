"""An `embed` or `rerank` scenario + seed + overrides -> its schedule: when each request goes out, which texts it carries.

The arrival times come from the same settings and processes as a generation schedule (`resolve`,
`draw_times`); each request's inputs are chunks of the shipped corpus (`scenarios.corpus`), picked by
a numpy Generator seeded from (seed, stream), so the same inputs give the same schedule; a rerank
request's query and passages come from their own chunk sizes. Embed and rerank scenarios are shipped
in `scenarios/embed/` (apart from the generation ones, which every generation command lists and runs).
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

EMBED_DIR = Path(__file__).resolve().parent / "embed"
_ARRIVAL, _TEXTS, _QUERIES = 0, 4, 5  # random streams per seed (4, 5: apart from the generation schedule's 0-3)
RETRIEVAL_TASKS = ("embed", "rerank")


@dataclass(frozen=True, slots=True)
class EmbedPlanned:
    """One scheduled embed request: its send offset from the run's start and its input texts."""

    t_s: float
    texts: tuple[str, ...]  # embed: the inputs; rerank: the passages
    warmup: bool  # sent before the measurement window opens; not measured
    query: str | None = None  # rerank: the query the passages are scored against


@dataclass(frozen=True)
class EmbedSchedule:
    scenario: str
    settings: Settings
    slos: SLOs
    chunk_words: int  # words per input (rerank: per passage)
    requests: tuple[EmbedPlanned, ...]
    task: str = "embed"  # embed or rerank

    @property
    def measured(self) -> tuple[EmbedPlanned, ...]:
        return tuple(r for r in self.requests if not r.warmup)


def embed_scenario_names() -> list[str]:
    """Names of the shipped embed scenarios, sorted."""
    return sorted(p.stem for p in EMBED_DIR.glob("*.yaml"))


def load_embed_scenario(name_or_path: str) -> S.Scenario:
    """A shipped embed or rerank scenario by name, or a YAML file by path; a generation scenario is refused in one line."""
    shipped = next((p for p in (EMBED_DIR / f"{name_or_path}.yaml", EMBED_DIR.parent / "rag" / f"{name_or_path}.yaml")
                    if p.is_file()), None)  # a shipped rag scenario is found too, to be refused naming its command
    scenario = load_scenario(shipped if shipped is not None else name_or_path)
    if scenario.workload.task == "rag":
        raise ScenarioError(f"scenario '{scenario.name}' is a rag scenario: run it with `advisor rag --scenario "
                            f"{name_or_path}`")
    if scenario.workload.task not in RETRIEVAL_TASKS:
        raise ScenarioError(f"scenario '{scenario.name}' is a {scenario.workload.task} scenario, not embed or rerank; "
                            f"choose one of {', '.join(embed_scenario_names())} or a YAML file with `task: embed` "
                            "or `task: rerank`")
    return scenario


def build_embed_schedule(scenario: S.Scenario, seed: int = 0, overrides: Overrides | None = None) -> EmbedSchedule:
    """The deterministic schedule of an embed scenario."""
    w = scenario.workload
    assert w.task in RETRIEVAL_TASKS, scenario.name
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
    if w.embed is not None:
        words, per_request, queries = w.embed.chunk_words, w.embed.inputs_per_request, None
    else:
        assert w.rerank is not None
        words, per_request = w.rerank.passage_words, w.rerank.passages_per_request
        qpool = chunks(w.rerank.query_words)
        queries = [qpool[i] for i in np.random.default_rng([st.seed, _QUERIES]).integers(0, len(qpool), len(times))]
    pool = chunks(words)
    picks = np.random.default_rng([st.seed, _TEXTS]).integers(0, len(pool), size=(len(times), per_request))
    reqs = tuple(EmbedPlanned(t, tuple(pool[i] for i in row), t < st.warmup_s, queries[k] if queries else None)
                 for k, (t, row) in enumerate(zip(times, picks)))
    return EmbedSchedule(scenario.name, st, scenario.slos, words, reqs, w.task)
