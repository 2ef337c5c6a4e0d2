"""matrix.json's cell records (`CellRecord`, `Attempt`) read back and write the same objects, in the same key order."""

from __future__ import annotations

import json

import pytest

from advisor.matrix.plan import load_plan
from advisor.matrix.progress import CellLog
from advisor.matrix.store import CellRecord, MatrixFile, MatrixStoreError, load_matrix
from tests.advisor.matrix.plans import write_plan


def _matrix(tmp_path) -> MatrixFile:
    cells = [{"name": "a", "rates": [1, 2]}, {"name": "b"}, {"name": "c"}, {"name": "d"}]
    m = MatrixFile("m", tmp_path / "runs", load_plan(write_plan(tmp_path, cells)), "local")
    log = CellLog(m, lambda line: None)
    log.started("a", "n1", "n1 at 10.0.0.1")
    log.interrupted("a", ["run-a", "run-b"])
    log.started("b", "n1", "here")
    log.started("b", "n2", "there")  # the first attempt ended with its node
    log.failed("b", "boom", ["sw-1"])
    log.started("c", "n2", "there")  # still running
    return m


def test_a_saved_matrix_reads_back_and_writes_the_same_cells(tmp_path):
    m = _matrix(tmp_path)
    saved = json.loads(m.path.read_text())
    back = load_matrix("m", m.root)
    again = back.to_dict()
    assert json.dumps(again["cells"], indent=1) == json.dumps(saved["cells"], indent=1)
    assert list(saved["cells"][1]) == ["name", "state", "node", "run_ids", "sweep_id", "error", "attempts"]
    assert [c["node"] for c in saved["cells"]] == ["n1 at 10.0.0.1", "there", "there", None]
    assert [a["outcome"] for a in saved["cells"][1]["attempts"]] == ["node died", "failed"]
    del again["updated_utc"], saved["updated_utc"]
    assert json.dumps(again, indent=1) == json.dumps(saved, indent=1)


def test_an_older_cell_lacking_keys_reads_with_the_defaults():
    assert CellRecord.from_dict({"name": "x", "state": "done", "node": None}) == CellRecord("x", "done")


def test_a_damaged_cell_names_the_file_and_the_field(tmp_path):
    m = _matrix(tmp_path)
    d = json.loads(m.path.read_text())
    d["cells"][0]["attempts"][0]["node_id"] = 7
    m.path.write_text(json.dumps(d))
    with pytest.raises(MatrixStoreError, match=r"matrix.json: a cell's record is damaged \(attempts\[0\].node_id is int"):
        load_matrix("m", m.root)
