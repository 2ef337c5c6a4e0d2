"""Bad logs: one clear line naming the file and line, and nothing written (not even half a file)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios.errors import ScenarioError
from scenarios.fit.fit import FitOptions, fit_logs

GOOD_JSON = '{"created": 1700000000, "usage": {"prompt_tokens": 10, "completion_tokens": 2}}\n'
GOOD_CSV = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.1,10,2\n2023-11-16 18:17:04.1,11,3\n"

CASES = [  # (file name, content, expected message)
    ("empty.jsonl", b"", r"empty.jsonl is empty"),
    ("empty.csv", b"", r"empty.csv is empty"),
    ("header.csv", b"TIMESTAMP,ContextTokens,GeneratedTokens\n", r"header.csv has a header but no rows"),
    ("cols.csv", b"a,b,c\n1,2,3\n", r"cols.csv, line 1: no timestamp column \(looked for TIMESTAMP.*--field time="),
    ("cols2.csv", b"time,prompt_tokens\n1,2\n", r"cols2.csv, line 1: no output token count column .*--field output="),
    ("nousage.jsonl", b'{"created": 1, "text": "hi"}\n' * 3, r"nousage.jsonl, line 1: no input token count field"),
    ("latin1.csv", GOOD_CSV.encode() + "2023-11-16 18:17:05.1,5,2,caf\xe9\n".encode("latin-1"),
     r"latin1.csv, line 4: not UTF-8 text \(byte 0xe9"),
    ("neg.csv", GOOD_CSV.encode() + b"2023-11-16 18:17:05.1,-5,2\n", r"neg.csv, line 4: input token count must be >= 0"),
    ("inf.csv", GOOD_CSV.encode() + b"2023-11-16 18:17:05.1,5,inf\n", r"inf.csv, line 4: output token count must be finite"),
    ("nan.jsonl", (GOOD_JSON + '{"created": 1700000001, "usage": {"prompt_tokens": NaN, "completion_tokens": 2}}\n')
     .encode(), r"nan.jsonl, line 2: input token count must be finite"),
    ("frac.jsonl", (GOOD_JSON + '{"created": 1700000001, "usage": {"prompt_tokens": 1.5, "completion_tokens": 2}}\n')
     .encode(), r"frac.jsonl, line 2: input token count must be a whole number"),
    ("negjson.jsonl", (GOOD_JSON + '{"created": 1700000001, "usage": {"prompt_tokens": 3, "completion_tokens": -1}}\n')
     .encode(), r"negjson.jsonl, line 2: output token count must be >= 0"),
    ("broken.jsonl", (GOOD_JSON + '{"created": 17\n').encode(), r"broken.jsonl, line 2: not valid JSON"),
    ("time.jsonl", (GOOD_JSON + '{"created": "yesterday", "usage": {"prompt_tokens": 3, "completion_tokens": 1}}\n')
     .encode(), r"time.jsonl, line 2: timestamp must be a number or an ISO 8601"),
    ("notime.jsonl", (GOOD_JSON + '{"usage": {"prompt_tokens": 3, "completion_tokens": 1}}\n').encode(),
     r"notime.jsonl, line 2: no timestamp"),
    ("mixed.jsonl", (GOOD_JSON + '{"created": "2023-11-16T18:00:00", "usage": {"prompt_tokens": 3, '
                     '"completion_tokens": 1}}\n').encode(), r"mixed.jsonl, line 2: .*ISO text but earlier rows had numbers"),
    ("short.csv", GOOD_CSV.encode() + b"2023-11-16 18:17:05.1,5\n", r"short.csv, line 4: expected 3 columns"),
    ("one.jsonl", GOOD_JSON.encode(), r"the logs have 1 request; a fit needs at least two"),
    ("same.jsonl", (GOOD_JSON * 3).encode(), r"every request in the logs has the same timestamp"),
    ("huge.jsonl", (GOOD_JSON + '{"created": 1700000001, "usage": {"prompt_tokens": 1e308, "completion_tokens": 2}}\n')
     .encode(), r"huge.jsonl, line 2: input token count must be at most 10,000,000"),
    ("hugetime.jsonl", (GOOD_JSON + '{"created": 1e308, "usage": {"prompt_tokens": 3, "completion_tokens": 2}}\n')
     .encode(), r"the logs span 1e\+299 s, more than 1e\+07 s"),
    ("span.jsonl", (GOOD_JSON + '{"created": 1e19, "usage": {"prompt_tokens": 3, "completion_tokens": 2}}\n')
     .encode(), r"the logs span .* more than 1e\+07 s"),
    ("damaged.csv.gz", gzip.compress(GOOD_CSV.encode())[:-12], r"damaged.csv.gz, line \d+: damaged gzip data"),
]


@pytest.mark.parametrize(("name", "content", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_log_is_one_clear_error_and_nothing_is_written(tmp_path: Path, name: str, content: bytes,
                                                           message: str) -> None:
    log = tmp_path / name
    log.write_bytes(content)
    out = tmp_path / "out"
    with pytest.raises(ScenarioError, match=message) as e:
        fit_logs(FitOptions(logs=(log,), out=out / "mine.yaml"))
    assert "\n" not in str(e.value)
    assert not out.exists() or not any(out.iterdir())  # no YAML, pairs, HTML or staging folder


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="log file .*nope.jsonl does not exist"):
        fit_logs(FitOptions(logs=(tmp_path / "nope.jsonl",), out=tmp_path / "x.yaml"))
    with pytest.raises(ScenarioError, match="is not a file"):
        fit_logs(FitOptions(logs=(tmp_path,), out=tmp_path / "x.yaml"))


def test_output_must_be_yaml(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(GOOD_JSON)
    with pytest.raises(ScenarioError, match="ending in .yaml"):
        fit_logs(FitOptions(logs=(tmp_path / "a.jsonl",), out=tmp_path / "x.json"))


def test_an_output_that_cannot_be_written_is_refused_before_the_logs_are_read(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(GOOD_JSON)
    log = (tmp_path / "a.jsonl",)
    with pytest.raises(ScenarioError, match=r"a.jsonl is a file, not a folder; give a path in a folder"):
        fit_logs(FitOptions(logs=log, out=tmp_path / "a.jsonl" / "x.yaml"))  # was: [Errno 17] File exists
    (tmp_path / "d.yaml").mkdir()
    with pytest.raises(ScenarioError, match="d.yaml is a folder; give a file name"):
        fit_logs(FitOptions(logs=log, out=tmp_path / "d.yaml"))
    with pytest.raises(ScenarioError, match="log file"):  # the output is checked first, then the logs
        fit_logs(FitOptions(logs=(tmp_path / "nope.jsonl",), out=tmp_path / "new" / "x.yaml"))
    assert not (tmp_path / "new").exists()


def _advisor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from advisor_cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize(("args", "message"), [
    (["scenarios", "fit", "latin1.csv", "-o", "x.yaml"], "error: log latin1.csv, line 4: not UTF-8 text"),
    (["scenarios", "fit", "missing.jsonl", "-o", "x.yaml"], "error: log file missing.jsonl does not exist"),
])
def test_cli_errors_are_one_line_without_traceback(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "latin1.csv").write_bytes(CASES[6][1])
    res = _advisor(*args, cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr.strip() == message or res.stderr.strip().startswith(message)
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["scenarios", "fit", "a.csv"], "Missing option '--output'"),
    (["scenarios", "fit", "-o", "x.yaml"], "Missing argument 'LOGS...'"),
    (["scenarios", "fit", "a.csv", "-o", "x.yaml", "--rate", "0"], "--rate must be a number > 0"),
    (["scenarios", "fit", "a.csv", "-o", "x.yaml", "--field", "bogus=x"], "--field: unknown role 'bogus'; roles: time"),
    (["scenarios", "fit", "a.csv", "-o", "x.yaml", "--field", "input"], "--field takes ROLE=NAME"),
    (["scenarios", "fit", "a.csv", "-o", "x.yaml", "--time-unit", "days"], "Invalid value for '--time-unit'"),
    (["scenarios", "fit", "a.csv", "-o", "x.yaml", "--name", "Bad Name"], "--name must be lowercase"),
    (["scenarios", "--json", "fit", "a.csv", "-o", "x.yaml"], "--json goes after the sub-command"),
])
def test_cli_usage_errors_name_the_flag(args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from advisor_cli import cli

    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and message in res.output
