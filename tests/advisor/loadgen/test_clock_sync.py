"""Clock offsets from round trips (advisor.loadgen.clock_sync) and the `--workers` spellings (advisor.loadgen.worker_spec): no Ray."""

from __future__ import annotations

import random

import pytest

from advisor.loadgen import clock_sync, worker_spec
from advisor.loadgen.clock_sync import ClockOffset


class _Link:
    """A worker whose clock reads driver + skew, behind a link with random, asymmetric one-way delays."""

    def __init__(self, skew_ns: int, seed: int = 0) -> None:
        self.skew_ns, self.now, self.rng = skew_ns, 10**12, random.Random(seed)

    def driver_now(self) -> int:
        return self.now

    def read_worker(self) -> int:
        self.now += self.rng.randint(50_000, 3_000_000)  # there
        t = self.now + self.skew_ns
        self.now += self.rng.randint(50_000, 3_000_000)  # back
        return t


@pytest.mark.parametrize("skew_ns", [5_000_000_000, -123_456_789_012, 0])
def test_the_measured_offset_is_within_its_uncertainty_of_the_true_one(skew_ns):
    link = _Link(skew_ns)
    off = clock_sync.measure(link.read_worker, n=8, now_ns=link.driver_now)
    assert off.samples == 8
    assert abs(off.offset_ns - skew_ns) <= off.uncertainty_ns
    assert off.uncertainty_ns == (off.rtt_ns + 1) // 2 and 100_000 <= off.rtt_ns <= 6_000_000


def test_the_round_trip_with_the_smallest_rtt_is_kept():
    samples = [(0, 5_000_000_900, 1_000), (10_000, 5_000_020_000, 30_000), (40_000, 5_000_040_100, 40_200)]
    off = clock_sync.estimate(samples)
    assert off == ClockOffset(offset_ns=5_000_000_000, uncertainty_ns=100, rtt_ns=200, samples=3)
    assert off.to_worker(1_000) == 5_000_001_000 and off.to_driver(5_000_001_000) == 1_000
    assert off.report() == {"clock_offset_ns": 5_000_000_000, "clock_uncertainty_ms": 0.0001, "clock_rtt_ms": 0.0002}
    with pytest.raises(ValueError, match="no round trips"):
        clock_sync.estimate([])
    with pytest.raises(ValueError, match="ends before it starts"):
        clock_sync.estimate([(10, 0, 5)])


def test_times_relative_to_the_translated_start_are_the_drivers_within_the_uncertainty():
    """A worker started at t0 + offset (its clock) stamps its sends relative to that; on the driver's clock
    the same instants are the same offsets from t0, off by the offset's error only."""
    skew = 7_777_777_777
    link = _Link(skew, seed=3)
    off = clock_sync.measure(link.read_worker, now_ns=link.driver_now)
    t0_driver = link.now + 1_000_000_000
    start_worker = off.to_worker(t0_driver)
    for after_ns in (0, 1_500_000, 60_000_000_000):
        instant_driver = t0_driver + after_ns  # something happens here...
        relative = (instant_driver + skew) - start_worker  # ...and the worker records it relative to its start
        assert abs(relative - (instant_driver - t0_driver)) <= off.uncertainty_ns


@pytest.mark.parametrize(("given", "parsed"), [("auto", "auto"), ("AUTO", "auto"), ("3", 3), (2, 2), ("ray:4", "ray:4"),
                                                (" Ray:02 ", "ray:2")])
def test_workers_spellings(given, parsed):
    assert worker_spec.parse(given) == parsed
    assert worker_spec.on_ray(parsed) == (int(str(parsed)[4:]) if str(parsed).startswith("ray:") else None)
    assert worker_spec.several(parsed) == (parsed not in ("auto", 1))


@pytest.mark.parametrize(("given", "says"), [
    ("ray:0", "--workers ray:0: ray:N needs a whole number of Ray actors N >= 1, e.g. ray:4"),
    ("ray:x", "--workers ray:x: ray:N needs a whole number of Ray actors N >= 1, e.g. ray:4"),
    ("ray:", "--workers ray:: ray:N needs"),
    ("0", "--workers must be 'auto', an integer >= 1 or ray:N (N Ray actors), got '0'"),
    (True, "got True"), ("k8s:2", "got 'k8s:2'"), (-1, "got -1")])
def test_bad_workers_say_which_spellings_there_are(given, says):
    with pytest.raises(worker_spec.WorkersError) as e:
        worker_spec.parse(given)
    assert says in str(e.value)


def test_bad_ray_workers_fail_before_anything_runs(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from advisor.run.bench import BenchConfig, BenchError, plan
    from advisor_cli import cli

    def bench(*args: str):
        return CliRunner().invoke(cli, ["bench", "--scenario", "chat", "--out", str(tmp_path), *args])

    res = bench("--engine", "fake", "--workers", "ray:2")  # plan() refuses it (the real CLI prints "error: ...")
    assert res.exit_code != 0 and "--workers ray:2: only a served engine (openai)" in str(res.exception)
    res = bench("--engine", "openai", "--url", "http://127.0.0.1:9", "--workers", "2", "--ray", "auto")
    assert res.exit_code == 2 and "the Ray cluster is for --workers ray:N" in res.output
    res = bench("--engine", "openai", "--url", "http://127.0.0.1:9", "--workers", "ray:x")
    assert res.exit_code == 2 and "ray:N needs a whole number of Ray actors" in res.output
    # an unreachable cluster needs Ray installed: tests/ray/test_workers_ray.py checks it (the ray group)
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # as without the `ray` extra
    with pytest.raises(BenchError, match=r"--workers ray:N needs Ray, which is not installed: pip install 'inference-advisor\[ray\]'"):
        plan(BenchConfig(scenario="chat", engine="openai", engine_options={"url": "http://127.0.0.1:9"},
                         out_dir=tmp_path, workers="ray:2"))


def test_a_matrix_cell_takes_ray_workers_and_refuses_bad_ones(tmp_path):
    from advisor.matrix.plan import PlanError, load_plan
    from tests.advisor.matrix.test_plan import write_plan

    served = {"engine": "openai", "scenario": "chat", "options": {"url": "http://127.0.0.1:9"}}
    plan = load_plan(write_plan(tmp_path, [{"name": "r", "workers": "ray:3", **served}]))
    assert plan.cell("r").workers == "ray:3" and plan.cell("r").cpus() == 1.0
    with pytest.raises(PlanError) as e:
        load_plan(write_plan(tmp_path, [{"name": "r0", "workers": "ray:0", **served},
                                        {"name": "fk", "workers": "ray:2", "engine": "fake", "scenario": "chat"}]))
    assert e.value.problems == [
        "cell 'r0': workers ray:0: ray:N needs a whole number of Ray actors N >= 1, e.g. ray:4",
        "cell 'fk': workers: ray:2, but only a served engine (openai) is driven by several processes; 'fake' runs in "
        "advisor and keeps one driver: drop `workers:`"]
