"""A plain install works without the repository: the wheel carries the Azure traces and the fit report template.

Builds the wheel from a clean copy of the sources (`pip wheel . --no-deps`), installs it into a fresh
venv outside the repository, and runs the replay scenarios and `scenarios fit` from a folder that has
no ../shared and no $ADVISOR_TRACES. The fresh venv borrows this interpreter's third-party packages
through a .pth file (so no registry is needed), but not this checkout: `advisor` and `scenarios` must
come from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "advisor", "adapters", "own_engine", "model_cache", "build_info", "fileform", "scenarios",
           "reports", "advisor_cli")

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for name in SOURCES:
        p = REPO / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
        else:
            shutil.copy2(p, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("ADVISOR_TRACES", "PYTHONPATH", "VIRTUAL_ENV")}
    _run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q", "-w", str(root / "dist")],
         src, env)
    wheel = next((root / "dist").glob("inference_advisor-*.whl"))  # named for the distribution (pyproject)
    target = root / "venv"
    venv.create(target, with_pip=False)
    py = target / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)],
         root, env)
    # third-party dependencies from this interpreter; this checkout's editable install is not on that path
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root, env).strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_borrowed_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    work = root / "user"
    work.mkdir()
    env["ADVISOR_HOME"] = str(root / "home")
    return target, work, env


def test_wheel_installs_outside_the_repository(installed: tuple[Path, Path, dict[str, str]]) -> None:
    target, work, env = installed
    where = _run([str(target / "bin" / "python"), "-c", "import advisor, scenarios, scenarios.fit, reports; "
                  "print(scenarios.__file__); print(scenarios.fit.__file__)"], work, env)
    assert all(line.startswith(str(target)) for line in where.split()), where
    names = {s["name"] for s in json.loads(_run([str(target / "bin" / "advisor"), "scenarios", "--json"], work, env))}
    assert {"azure-code-replay", "azure-conv-replay", "copilot"} <= names
    # own_engine's native kernels are C sources (and headers) built at first use: the wheel must carry them,
    # and where this machine can build them, they build from the installed copy
    *src, built = _run([str(target / "bin" / "python"), "-c", "from own_engine.kernels.backends import native_kernels; "
                        "from own_engine.kernels.native import HEADERS, NOT_HERE, "
                        "SOURCES; k = native_kernels(); print(*SOURCES, *HEADERS); "
                        "print('built' if not isinstance(k, str) else 'not here' if any(s in k for s in NOT_HERE) "
                        "else k)"], work, env).splitlines()
    src = " ".join(src).split()
    assert {p.rsplit("/", 1)[-1] for p in src} == {"panel_linear.c", "decode_attention.c", "chunk_attention.c",
                                                  "layer_ops.c", "decode_step.c", "simd_math.h",
                                                  "kernel_parts.h"}, src
    assert all(p.startswith(str(target)) for p in src), src
    assert built in ("built", "not here"), built


@pytest.mark.parametrize("scenario", ["azure-code-replay", "azure-conv-replay"])
def test_replays_run_from_a_plain_install(scenario: str, installed: tuple[Path, Path, dict[str, str]]) -> None:
    target, work, env = installed
    out = _run([str(target / "bin" / "advisor"), "bench", "--scenario", scenario, "--engine", "fake", "--full-scale",
                "--rate", "20", "--max-requests", "10", "--out", str(work / "runs"), "--json"], work, env)
    result = json.loads(out)
    assert result["scenario"]["name"] == scenario
    assert result["summary"]["n_ok"] == 10


def test_fit_runs_from_a_plain_install(installed: tuple[Path, Path, dict[str, str]]) -> None:
    target, work, env = installed
    site = Path(_run([str(target / "bin" / "python"), "-c", "import scenarios.trace_files as t; print(t.SHIPPED_TRACES)"],
                     work, env).strip())
    log = site / "AzureLLMInferenceTrace_conv.csv.gz"
    _run([str(target / "bin" / "advisor"), "scenarios", "fit", str(log), "-o", str(work / "mine.yaml")], work, env)
    assert (work / "mine.yaml").is_file() and (work / "mine.fit.html").is_file()
    out = _run([str(target / "bin" / "advisor"), "bench", "--scenario", str(work / "mine.yaml"), "--engine", "fake",
                "--rate", "20", "--warmup", "0.5", "--duration", "2", "--out", str(work / "runs"), "--json"], work, env)
    assert json.loads(out)["summary"]["n_ok"] >= 20


def test_embed_scenarios_and_their_corpus_ship_in_the_wheel(installed: tuple[Path, Path, dict[str, str]]) -> None:
    target, work, env = installed
    out = _run([str(target / "bin" / "python"), "-c", "from scenarios import corpus; from scenarios.embed_schedule "
                "import build_embed_schedule, embed_scenario_names, load_embed_scenario as load; "
                "print(corpus.CORPUS_FILE); print(*embed_scenario_names()); "
                "print(sum(len(build_embed_schedule(load(n)).requests) for n in embed_scenario_names())); "
                "from scenarios.rag_schedule import build_rag_schedule, load_rag_scenario, rag_scenario_names; "
                "print(*rag_scenario_names()); print(len(build_rag_schedule(load_rag_scenario('rag')).requests))"],
               work, env).split("\n")
    assert out[0].startswith(str(target)) and (Path(out[0]).parent / "README.md").is_file(), out
    assert out[1].split() == ["embed-ingest", "embed-query", "rerank"] and int(out[2]) > 0, out
    assert out[3].split() == ["rag"] and int(out[4]) > 0, out  # the rag scenario ships too
