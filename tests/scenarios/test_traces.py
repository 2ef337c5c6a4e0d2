from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.errors import ScenarioError
from scenarios.trace_files import find_trace, read_trace

AZURE_OK = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:17:03.9799600,4808,10
2023-11-16 18:17:04.0319600,3180,8
2023-11-16 18:17:05.9799600,110,27
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_azure_reader(tmp_path: Path) -> None:
    t = read_trace(_write(tmp_path, "a.csv", AZURE_OK))
    assert t.format == "azure" and len(t) == 3
    assert t.t_s[0] == 0.0
    assert t.t_s[1] == pytest.approx(0.052, abs=1e-6)  # 7 fractional digits kept
    assert t.t_s[2] == pytest.approx(2.0, abs=1e-6)
    assert t.n_in == (4808, 3180, 110) and t.n_out == (10, 8, 27)
    assert t.rate_rps == pytest.approx(1.0)


@pytest.mark.parametrize(("row", "line", "what"), [
    ("2023-11-16 18:17:06.0,abc,3", 3, "ContextTokens"),
    ("2023-11-16 18:17:06.0,5,0", 3, "GeneratedTokens must be >= 1"),
    ("yesterday,5,5", 3, "TIMESTAMP"),
    ("2023-11-16 18:17:06.0,5", 3, "expected 3 columns"),
    ("2023-11-16 18:17:01.0,5,5", 3, "backwards"),
])
def test_azure_bad_row_names_file_and_line(tmp_path: Path, row: str, line: int, what: str) -> None:
    p = _write(tmp_path, "bad.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.0,1,1\n" + row + "\n")
    with pytest.raises(ScenarioError, match=f"bad.csv, line {line}: .*{what}"):
        read_trace(p)


def test_azure_bad_header(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="line 1: header"):
        read_trace(_write(tmp_path, "h.csv", "time,in,out\n1,2,3\n"))


def test_mooncake_reader(tmp_path: Path) -> None:
    rows = [{"timestamp": 1000, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2]},
            {"timestamp": 3000, "input_length": 600, "output_length": 7, "hash_ids": [0, 9]}]
    t = read_trace(_write(tmp_path, "m.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n"))
    assert t.format == "mooncake"
    assert t.t_s == (0.0, 2.0)
    assert t.hash_ids == ((0, 1, 2), (0, 9))
    assert t.n_in == (1100, 600) and t.n_out == (5, 7)


@pytest.mark.parametrize(("line2", "what"), [
    ("{not json", "not valid JSON"),
    ('{"timestamp": 5000, "input_length": 3}', "missing output_length"),
    ('{"timestamp": 5000, "input_length": 3, "output_length": 1, "hash_ids": ["a"]}', "hash_ids"),
    ('{"timestamp": -1, "input_length": 3, "output_length": 1}', "timestamp"),
    ('[1, 2]', "JSON object"),
])
def test_mooncake_bad_row_names_file_and_line(tmp_path: Path, line2: str, what: str) -> None:
    good = '{"timestamp": 1000, "input_length": 3, "output_length": 1, "hash_ids": [1]}'
    p = _write(tmp_path, "bad.jsonl", good + "\n" + line2 + "\n")
    with pytest.raises(ScenarioError, match=f"bad.jsonl, line 2: .*{what}"):
        read_trace(p)


def test_find_trace_uses_env_then_yaml_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "env").mkdir()
    (tmp_path / "yaml").mkdir()
    _write(tmp_path / "yaml", "t.csv", AZURE_OK)
    monkeypatch.delenv("ADVISOR_TRACES", raising=False)
    assert find_trace("t.csv", tmp_path / "yaml") == tmp_path / "yaml" / "t.csv"
    _write(tmp_path / "env", "t.csv", AZURE_OK)
    monkeypatch.setenv("ADVISOR_TRACES", str(tmp_path / "env"))
    assert find_trace("t.csv", tmp_path / "yaml") == tmp_path / "env" / "t.csv"
    with pytest.raises(ScenarioError, match="not found.*set ADVISOR_TRACES"):
        find_trace("missing.csv", tmp_path / "yaml")
