#!/usr/bin/env bash
# Run the embedding tests of the engines group (MiniLM in process and served by infinity-emb, the ONNX Runtime
# embedding conversion on a tiny model, own-embed against sentence-transformers, the ONNX Runtime and OpenVINO
# rerank engines on a tiny cross-encoder).
#
# infinity-emb goes into its own venv (.venv-infinity): it pins older transformers and
# sentence-transformers than the main venv. That venv reads the main venv's site-packages
# (a .pth file, after its own) so it reuses the CPU torch instead of pulling the CUDA build
# (several GB) that `pip install infinity-emb[all]` asks for. First run: about 2 minutes.
# Usage: scripts/test_embed.sh [extra pytest args]      INFINITY_VENV=... to choose the venv path
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${INFINITY_VENV:-.venv-infinity}"
MAIN="${MAIN_VENV:-.venv}"
PY="${PYTHON:-python3}"

"$MAIN/bin/pip" install -q --disable-pip-version-check -e ".[dev,embed,onnx,openvino]"   # sentence-transformers; ONNX Runtime and OpenVINO for the *-embed and *-rerank engines
if [ ! -x "$VENV/bin/infinity_emb" ]; then
    echo "creating $VENV with infinity-emb..."
    "$PY" -m venv "$VENV"
    SITE=$("$MAIN/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    echo "$SITE" > "$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz_main_venv.pth"
    "$VENV/bin/pip" install -q "infinity-emb[server,torch]"
fi

export ADVISOR_INFINITY="$PWD/$VENV/bin/infinity_emb"
# the real-model tests (engines-marked) and the ones that need sentence-transformers (the rag pipeline too)
exec "$MAIN/bin/python" -m pytest -m "engines or not engines" tests/realmodel/test_minilm.py \
    tests/adapters/test_sentence_transformers_embed.py tests/adapters/test_onnxruntime_embed.py tests/adapters/test_own_embed_st.py \
    tests/adapters/test_onnxruntime_rerank.py tests/advisor/embed tests/advisor/rag -q -p no:cacheprovider "$@"
