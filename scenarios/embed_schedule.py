"""An `embed` scenario + seed + overrides -> its schedule: when each request goes out and which texts it carries.

The arrival times come from the same settings and processes as a generation schedule (`resolve`,
`draw_times`); each request's inputs are chunks of the shipped corpus (`scenarios.corpus`), picked by
a numpy Generator seeded from (seed, stream), so the same inputs give the same schedule. Embed
scenarios are shipped in `scenarios/embed/` (apart from the generation ones, which every generation
command lists and runs).
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
_ARRIVAL, _TEXTS = 0, 4  # random streams per seed (4: apart from the generation schedule's 0-3)


@dataclass(frozen=True, slots=True)
class EmbedPlanned:
    """One scheduled embed request: its send offset from the run's start and its input texts."""

    t_s: float
    texts: tuple[str, ...]
    warmup: bool  # sent before the measurement window opens; not measured


@dataclass(frozen=True)
class EmbedSchedule:
    scenario: str
    settings: Settings
    slos: SLOs
    chunk_words: int
    requests: tuple[EmbedPlanned, ...]

    @property
    def measured(self) -> tuple[EmbedPlanned, ...]:
        return tuple(r for r in self.requests if not r.warmup)


def embed_scenario_names() -> list[str]:
    """Names of the shipped embed scenarios, sorted."""
    return sorted(p.stem for p in EMBED_DIR.glob("*.yaml"))


def load_embed_scenario(name_or_path: str) -> S.Scenario:
    """A shipped embed scenario by name, or a YAML file by path; a generation scenario is refused in one line."""
    shipped = EMBED_DIR / f"{name_or_path}.yaml"
    scenario = load_scenario(shipped if shipped.is_file() else name_or_path)
    if scenario.workload.task != "embed":
        raise ScenarioError(f"scenario '{scenario.name}' is a {scenario.workload.task} scenario, not embed; "
                            f"choose one of {', '.join(embed_scenario_names())} or a YAML file with `task: embed`")
    return scenario


def build_embed_schedule(scenario: S.Scenario, seed: int = 0, overrides: Overrides | None = None) -> EmbedSchedule:
    """The deterministic schedule of an embed scenario."""
    load = scenario.workload.embed
    assert scenario.workload.task == "embed" and load is not None, scenario.name
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
    pool = chunks(load.chunk_words)
    picks = np.random.default_rng([st.seed, _TEXTS]).integers(0, len(pool), size=(len(times), load.inputs_per_request))
    reqs = tuple(EmbedPlanned(t, tuple(pool[i] for i in row), t < st.warmup_s) for t, row in zip(times, picks))
    return EmbedSchedule(scenario.name, st, scenario.slos, load.chunk_words, reqs)
