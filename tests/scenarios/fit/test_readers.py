"""The log layouts `scenarios fit` reads, field mapping, and timestamp units: detected and stated."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from scenarios.fit.fields import FieldMap
from scenarios.fit.fit import FitOptions, read_logs
from tests.scenarios.fit.make_logs import T0, openai_rows, write_csv, write_jsonl


def _read(*paths: Path, **kw):
    return read_logs(FitOptions(logs=paths, out=paths[0].with_suffix(".yaml"), **kw))


def _times(n: int = 50) -> np.ndarray:
    return np.arange(n) * 0.5


def test_openai_style_jsonl_reads_usage_and_never_text(tmp_path: Path) -> None:
    t = _times()
    rows = openai_rows(t, np.full(t.size, 100), np.full(t.size, 7))
    data, files, counts = _read(write_jsonl(tmp_path / "gw.jsonl", rows))
    assert files[0].layout == "OpenAI-style JSONL" and counts == [50]
    assert files[0].fields == {"time": "created", "input": "usage.prompt_tokens",
                               "output": "usage.completion_tokens", "model": "model"}
    assert data.basis.unit == "s" and data.basis.epoch and "since 1970" in data.basis.statement
    assert data.t_s[-1] == pytest.approx(24.5)
    assert data.lengths.mean_in == 100 and data.lengths.mean_out == 7


def test_litellm_payload_with_iso_start_and_end(tmp_path: Path) -> None:
    rows = [{"startTime": f"2025-03-01T10:00:{i:02d}.250Z", "endTime": f"2025-03-01T10:00:{i:02d}.750Z",
             "prompt_tokens": 50 + i, "completion_tokens": 5, "model": "gpt-x", "session_id": f"s{i % 3}",
             "messages": "not read"} for i in range(20)]
    data, files, _ = _read(write_jsonl(tmp_path / "litellm.jsonl", rows))
    assert files[0].fields is not None and files[0].fields["time"] == "startTime"
    assert data.basis.unit == "iso" and "ISO 8601" in data.basis.statement
    assert data.sessions is not None and np.allclose(data.sessions.latency_s, 0.5)


def test_azure_csv_gz(tmp_path: Path) -> None:
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:17:{i:02d}.9799600,{100 + i},{10}\n" for i in range(30))
    p = tmp_path / "azure.csv.gz"
    p.write_bytes(gzip.compress(text.encode()))
    data, files, _ = _read(p)
    assert files[0].layout == "Azure CSV" and data.n_rows == 30 and data.t_s[-1] == pytest.approx(29.0)


def test_burstgpt_csv_with_model_filter_and_relative_seconds(tmp_path: Path) -> None:
    header = ["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"]
    rows = [[i * 2, "ChatGPT" if i % 2 else "GPT-4", 300, 0 if i == 5 else 40, 340, "Conversation log"]
            for i in range(40)]
    p = write_csv(tmp_path / "burst.csv", header, rows)
    data, files, _ = _read(p)
    assert files[0].layout == "BurstGPT CSV"
    assert not data.basis.epoch and data.basis.unit == "s" and "--time-unit ms" in data.basis.statement
    assert data.zero_tokens == 1 and data.lengths.n == 39  # a failed request: an arrival, not a length
    assert data.models == {"ChatGPT": 20, "GPT-4": 20}
    only, _, _ = _read(p, model="GPT-4")
    assert only.n_rows == 20 and only.skipped_model == 20 and only.t_s[-1] == pytest.approx(76.0)


def test_mooncake_jsonl_is_milliseconds_with_prefix_reuse(tmp_path: Path) -> None:
    rows = [{"timestamp": 1000 * i, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2 + i]}
            for i in range(10)]
    data, files, _ = _read(write_jsonl(tmp_path / "mc.jsonl", rows))
    assert files[0].layout == "Mooncake JSONL" and data.basis.unit == "ms"
    assert data.t_s[-1] == pytest.approx(9.0)
    assert data.prefix is not None and data.prefix.reused_rows == 9  # blocks 0 and 1 seen before
    assert data.prefix.hit_ratio == pytest.approx(9 * 1024 / (10 * 1100))
    assert data.pairs_prefix[1] == (0, 1)


@pytest.mark.parametrize(("scale", "unit"), [(1.0, "s"), (1e3, "ms"), (1e6, "us"), (1e9, "ns")])
def test_epoch_units_are_detected_from_their_size(tmp_path: Path, scale: float, unit: str) -> None:
    rows = [{"ts": (T0 + i) * scale, "input_tokens": 10, "output_tokens": 2} for i in range(5)]
    data, _, _ = _read(write_jsonl(tmp_path / "e.jsonl", rows))
    assert data.basis.unit == unit and data.t_s[-1] == pytest.approx(4.0)


def test_time_unit_flag_wins_and_field_map_reads_other_names(tmp_path: Path) -> None:
    rows = [{"when": i * 250, "req": {"in": 12}, "out_tok": 3} for i in range(8)]
    p = write_jsonl(tmp_path / "custom.jsonl", rows)
    fields = FieldMap.parse(["time=when", "input=req.in", "output=out_tok"])
    data, files, _ = _read(p, fields=fields, time_unit="ms")
    assert data.t_s[-1] == pytest.approx(1.75) and "as --time-unit says" in data.basis.statement
    assert files[0].layout == "JSONL"


def test_out_of_order_rows_are_sorted_and_counted(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", openai_rows(np.array([0.0, 1.0, 3.0, 2.0]), np.full(4, 10), np.full(4, 2)))
    b = write_jsonl(tmp_path / "b.jsonl", openai_rows(np.array([0.5, 1.5, 2.5]), np.full(3, 10), np.full(3, 2)))
    data, _, counts = _read(a, b)  # two replicas' logs, merged
    assert counts == [4, 3]
    assert data.out_of_order == 2  # 2.0 after 3.0, and b's first row after a's last
    assert data.t_s.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0] and data.n_rows == 7


def test_rows_without_usage_are_arrivals_only(tmp_path: Path) -> None:
    rows = [json.loads(json.dumps(r)) for r in openai_rows(_times(6), np.full(6, 10), np.full(6, 2))]
    rows[0]["usage"] = None  # a failed request logged before the first success
    rows[3].pop("usage")
    data, _, _ = _read(write_jsonl(tmp_path / "f.jsonl", rows))
    assert data.n_rows == 6 and data.no_usage == 2 and data.lengths.n == 4
