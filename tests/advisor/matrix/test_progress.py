"""CellLog: a cut-off cell's partial runs and its partial sweep are recorded apart, as a finished cell's are."""

from __future__ import annotations

from advisor.matrix.plan import load_plan
from advisor.matrix.progress import CellLog
from advisor.matrix.store import MatrixFile
from advisor.sweep.run import SWEEP_FILE
from tests.advisor.matrix.plans import write_plan


def test_a_partial_sweep_is_the_cells_sweep_id_not_one_of_its_runs(tmp_path):
    m = MatrixFile("m", tmp_path / "runs", load_plan(write_plan(tmp_path, [{"name": "s", "rates": [1, 2]}])), "local")
    (m.root / "sw-1").mkdir(parents=True)
    (m.root / "sw-1" / SWEEP_FILE).write_text("{}")
    log = CellLog(m, lambda line: None)
    log.started("s", "local", "here")
    log.interrupted("s", ["run-a", "sw-1", "run-b"])
    assert (m.cells["s"].run_ids, m.cells["s"].sweep_id) == (["run-a", "run-b"], "sw-1")
    log.started("s", "local", "here")
    log.failed("s", "boom", ["sw-1", "run-a"])
    assert (m.cells["s"].run_ids, m.cells["s"].sweep_id) == (["run-a"], "sw-1")
