"""One place that records what happens to each cell: the matrix file is updated and a line is shown.

Both runners (here, on Ray) report through `CellLog`, so the matrix file and the console say the same
thing whatever ran the cell: started on which node (attempt n), each sweep step, done with which runs,
failed and why, node died and retried, interrupted.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from advisor.matrix.cell import CellRuns
from advisor.matrix.store import Attempt, MatrixFile, utc_now


class CellLog:
    def __init__(self, matrix: MatrixFile, say: Callable[[str], None]) -> None:
        self.matrix = matrix
        self.say = say
        self._t0: dict[str, float] = {}
        self._order = {c.name: i + 1 for i, c in enumerate(matrix.plan.cells)}

    def _tag(self, name: str) -> str:
        return f"[{self._order[name]}/{len(self._order)}] {name}"

    def started(self, name: str, node_id: str, node: str) -> int:
        """A new attempt of the cell began on `node`; an attempt still open ended with its node's death."""
        rec = self.matrix.cells[name]
        if rec.attempts and rec.attempts[-1].ended_utc is None:
            self.lost(name, f"node {rec.attempts[-1].node} died during the cell; Ray retried it")
        rec.attempts.append(Attempt(node_id, node, utc_now()))
        rec.state, rec.error = "running", None
        self._t0[name] = time.monotonic()
        self.matrix.save()
        n = len(rec.attempts)
        self.say(f"{self._tag(name)}: started on {node}" + (f" (attempt {n})" if n > 1 else ""))
        return n

    def progress(self, name: str, message: str) -> None:
        self.say(f"{self._tag(name)}: {message}")

    def done(self, name: str, runs: CellRuns) -> None:
        rec = self.matrix.cells[name]
        self._end(name, "done")
        rec.state, rec.run_ids, rec.sweep_id, rec.error = "done", list(runs.run_ids), runs.sweep_id, None
        self.matrix.save()
        what = f"sweep {runs.sweep_id} ({len(runs.run_ids)} runs)" if runs.sweep_id else f"run {runs.run_ids[0]}"
        self.say(f"{self._tag(name)}: done in {self._took(name)}: {what}")

    def failed(self, name: str, reason: str, partial: list[str] | None = None) -> None:
        rec = self.matrix.cells[name]
        self._end(name, "failed", reason)
        rec.state, rec.error = "failed", reason
        rec.run_ids, rec.sweep_id = self._split(partial or [])
        self.matrix.save()
        self.say(f"{self._tag(name)}: FAILED: {reason}")

    def lost(self, name: str, reason: str) -> None:
        """The current attempt ended because its node (or worker) died; Ray runs it again."""
        self._end(name, "node died", reason)
        self.matrix.save()
        self.say(f"{self._tag(name)}: {reason}")

    def interrupted(self, name: str, partial: list[str]) -> None:
        rec = self.matrix.cells[name]
        self._end(name, "interrupted")
        rec.state = "interrupted"
        rec.run_ids, rec.sweep_id = self._split(partial)
        self.matrix.interrupted.append(name)
        self.matrix.save()
        kept = f"; kept {len(rec.run_ids)} partial run(s)" if rec.run_ids else ""
        self.say(f"{self._tag(name)}: interrupted{kept}")

    def _split(self, ids: list[str]) -> tuple[list[str], str | None]:
        """Partial ids as (runs, the sweep's id): a cut-off sweep cell keeps its sweep.json too."""
        from advisor.sweep.run import SWEEP_FILE

        sweeps = [i for i in ids if (self.matrix.root / i / SWEEP_FILE).is_file()]
        return [i for i in ids if i not in sweeps], (sweeps[0] if sweeps else None)

    def _end(self, name: str, outcome: str, error: str | None = None) -> None:
        rec = self.matrix.cells[name]
        if rec.attempts and rec.attempts[-1].ended_utc is None:
            a = rec.attempts[-1]
            a.ended_utc, a.outcome, a.error = utc_now(), outcome, error

    def _took(self, name: str) -> str:
        return f"{time.monotonic() - self._t0.get(name, time.monotonic()):.1f} s"
