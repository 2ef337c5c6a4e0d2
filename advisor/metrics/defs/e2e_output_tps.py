"""Output tokens per second per user, end to end (`e2e_output_tps`), as docs/metrics.md defines it.

n_out / (t_last - t_send): the rate at which one user receives the whole answer, the wait for the first token
included. Interactivity (1000 / TPOT) is the rate once tokens flow; this one also falls when prefill or queueing
is slow. Higher is better, so its worst tail is its low percentiles and its headline figure is p10: the rate
the slowest tenth of users got.
"""

from __future__ import annotations

from advisor.loadgen.records import RequestRecord
from advisor.metrics.metric import Metric


def e2e_output_tps(rec: RequestRecord) -> float | None:
    """n_out / (t_last - t_send) in tokens/s; None when the request was never sent, gave no token or took no time."""
    t_last = rec.t_last_ns
    if rec.t_send_ns is None or t_last is None or rec.n_out < 1 or t_last <= rec.t_send_ns:
        return None
    return rec.n_out / ((t_last - rec.t_send_ns) / 1e9)


METRIC = Metric(
    key="e2e_output_tps", header="E2E output tok/s per user", unit="tok/s", better="higher", of=e2e_output_tps,
    order=110, definition="n_out / (t_last - t_send): output tokens/s one user gets over the whole request, "
                          "the wait for the first token included",
    percentiles=(10,), report=(),
)
