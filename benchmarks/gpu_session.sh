#!/bin/bash
# The checks a session lent a GPU runs (issue 27's GPU section), prepared so that the machine's 15 minutes go to
# measuring, not to debugging a command line. Run from the repository root on the GPU machine:
#
#   bash benchmarks/gpu_session.sh all        # a session's one run: the prompt step, overlap, decode attention (<= ~10 min)
#   bash benchmarks/gpu_session.sh steps      # first: why steps with a prompt took 90-100 ms on the H200 (~3 min)
#   bash benchmarks/gpu_session.sh served     # served against core, llama-1b, 1/8/64 users, chat-like lengths (~5 min)
#   bash benchmarks/gpu_session.sh selftest   # `advisor selftest` (at most ~8 minutes by design)
#   bash benchmarks/gpu_session.sh overlap    # overlap scheduling on a GPU: same tokens? served and core, off and on (~6 min)
#   bash benchmarks/gpu_session.sh attention  # the Triton paged decode kernel against padded SDPA: logits, then 64 users at long contexts (~5 min)
#
# Each writes what it measured under $OUT (the device tool brings that folder back) and prints a summary. The
# packages the GPU image lacks travel as wheels in .whl/ (ignored by git; fetch them on a machine with the
# package registry with `bash benchmarks/gpu_session.sh wheels`, then name `.whl` in the device tool's carry).
# GPU_SESSION_DEVICE=cpu GPU_SESSION_MODEL=tiny runs the same commands on a CPU, to try the script itself.
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-session-out}
mkdir -p "$OUT"
DEVICE=${GPU_SESSION_DEVICE:-cuda}
MODEL=${GPU_SESSION_MODEL:-llama-1b}
PY=${PYTHON:-python3}

if [ "${1:-}" = wheels ]; then  # here, with the registry: the wheels the GPU image lacks, for its Python 3.12
    plat="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64"
    # shellcheck disable=SC2086
    $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $plat -d .whl \
        pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 gguf==0.19.0 \
        orjson==3.13.0 py-spy==0.4.3 plotly==7.1.0
    exit $?
fi

if [ -z "${GPU_SESSION_NO_WHEELS:-}" ] && ls .whl/*.whl >/dev/null 2>&1; then  # GPU_SESSION_NO_WHEELS=1: a machine that has them
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:$PWD
else  # keep what a caller put there (`all` runs this script again, with the wheels it installed)
    export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
fi
export ADVISOR_HOME=${ADVISOR_HOME:-/tmp/advisor-home} PYTHONUNBUFFERED=1 ADVISOR_EXIT_ZERO=1
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv 2>&1 | head -3
  $PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"; git log -1 --format=%h 2>/dev/null
  nproc; } | tee "$OUT/machine.txt"

case "${1:-}" in
all)  # one lent GPU's 15 minutes: the first question of each, in at most ~10 minutes (each part under its own timeout)
    $PY -m advisor_cli models create "$MODEL" --preset "$MODEL" >/dev/null 2>&1 || true
    timeout 120 $PY benchmarks/mixed_step.py --preset "$MODEL" --device "$DEVICE" --batch 48 --context 1300 \
        --prompt-lens 256,1024 --repeats 3 --profile > "$OUT/mixed_step.json" 2> "$OUT/mixed_step.log"
    echo "mixed_step exit $?"; grep -E "step .* ms" "$OUT/mixed_step.log"
    GPU_SESSION_NO_WHEELS=1 GPU_SESSION_PROMPTS=16 GPU_SESSION_OVERLAP_USERS=1,64 GPU_SESSION_AB_S=5 \
        timeout 240 bash "$0" overlap 2>&1 | grep -v "^torch \|^[0-9]*$"
    GPU_SESSION_NO_WHEELS=1 GPU_SESSION_PROMPTS=16 GPU_SESSION_AB_S=5 timeout 200 bash "$0" attention 2>&1 | \
        grep -v "^torch \|^[0-9]*$"
    ;;
steps)
    $PY -m advisor_cli models create "$MODEL" --preset "$MODEL" >/dev/null 2>&1 || true
    # one step with a prompt beside 48 decodes at chat contexts, against the decodes alone (graphs, eager) and the
    # prompt alone, with the profiler's top operators of the mixed step (benchmarks/mixed_step.py)
    timeout 240 $PY benchmarks/mixed_step.py --preset "$MODEL" --device "$DEVICE" --batch 48 --context 1300 \
        --prompt-lens 256,1024 --repeats 5 --profile > "$OUT/mixed_step.json" 2> "$OUT/mixed_step.log"
    echo "mixed_step exit $?"; grep -E "step .* ms" "$OUT/mixed_step.log"
    # the H200 run f415's command, then its steps rebuilt as benchmarks/engine_steps.py did for the H200 runs
    timeout 300 $PY -m advisor_cli bench --engine own --device "$DEVICE" --model "$MODEL" --scenario chat-closed \
        --full-scale --concurrency 64 --max-input-tokens 3000 --duration 40 --warmup 5 --out "$OUT/runs" \
        > "$OUT/chat_closed.log" 2>&1
    echo "chat-closed exit $?"; grep -E "verdict|TPOT|ITL|throughput" "$OUT/chat_closed.log" | head -6
    run=$(ls -d "$OUT"/runs/*/ 2>/dev/null | tail -1)
    [ -n "$run" ] && $PY benchmarks/engine_steps.py "$run" | tee "$OUT/engine_steps.txt"
    ;;
served)
    $PY -m advisor_cli models create "$MODEL" --preset "$MODEL" >/dev/null 2>&1 || true
    # the H200 runs' traffic shape (chat: ~1,155 in, ~211 out), fixed lengths so both sides get the same work
    timeout 420 $PY benchmarks/serving_overhead.py --device "$DEVICE" --model "$MODEL" --prompt-len 1024 \
        --output-len 200 --concurrency "${GPU_SESSION_CONCURRENCY:-1,8,64}" --duration "${GPU_SESSION_DURATION:-20}" \
        --warmup 5 > "$OUT/serving_overhead.json" 2> "$OUT/serving_overhead.log"
    echo "serving_overhead exit $?"; grep -E "^C=" "$OUT/serving_overhead.log"
    ;;
overlap)
    $PY -m advisor_cli models create "$MODEL" --preset "$MODEL" >/dev/null 2>&1 || true
    # the same greedy tokens with and without overlap (docs/engines.md, "Overlap scheduling"), and their wall times
    timeout 180 $PY benchmarks/same_tokens.py --model "$MODEL" --device "$DEVICE" --option overlap --values false,true \
        --prompts "${GPU_SESSION_PROMPTS:-96}" --longest 1500 --max-tokens 200 \
        > "$OUT/overlap_tokens.jsonl" 2> "$OUT/overlap_tokens.log"
    echo "overlap tokens exit $?"; cat "$OUT/overlap_tokens.jsonl"
    for ov in ${GPU_SESSION_OVERLAP_RUNS:-false true}; do
        timeout 240 $PY benchmarks/serving_overhead.py --device "$DEVICE" --model "$MODEL" --prompt-len 1024 \
            --output-len 200 --concurrency "${GPU_SESSION_OVERLAP_USERS:-1,64}" --duration "${GPU_SESSION_AB_S:-10}" \
            --warmup 3 --opt overlap=$ov \
            > "$OUT/serving_overhead_overlap_$ov.json" 2> "$OUT/serving_overhead_overlap_$ov.log"
        echo "serving_overhead overlap=$ov exit $?"; grep -E "^C=" "$OUT/serving_overhead_overlap_$ov.log"
    done
    ;;
attention)
    $PY -m advisor_cli models create "$MODEL" --preset "$MODEL" >/dev/null 2>&1 || true
    # the same greedy tokens from both decode routes (bf16: a near-tie may flip; the share that agree is printed)
    timeout 180 $PY benchmarks/same_tokens.py --model "$MODEL" --device "$DEVICE" --option decode_attention \
        --values sdpa,triton --prompts "${GPU_SESSION_PROMPTS:-64}" --longest 3000 --max-tokens 128 \
        $( [ "$DEVICE" = cpu ] && echo --opt linear_kernels=torch ) > "$OUT/attention_tokens.jsonl" 2> "$OUT/attention_tokens.log"
    echo "attention tokens exit $?"; cat "$OUT/attention_tokens.jsonl"; tail -3 "$OUT/attention_tokens.log"
    for att in sdpa triton; do
        timeout 200 $PY benchmarks/serving_overhead.py --device "$DEVICE" --model "$MODEL" --prompt-len 3000 \
            --output-len 200 --concurrency 64 --duration "${GPU_SESSION_AB_S:-10}" --warmup 3 \
            --opt decode_attention=$att \
            > "$OUT/serving_overhead_attention_$att.json" 2> "$OUT/serving_overhead_attention_$att.log"
        echo "serving_overhead decode_attention=$att exit $?"; grep -E "^C=" "$OUT/serving_overhead_attention_$att.log"
    done
    ;;
selftest)
    timeout 540 $PY -m advisor_cli selftest --device "$DEVICE" --out "$OUT/selftest" ${GPU_SESSION_SELFTEST_ARGS:-} \
        > "$OUT/selftest.log" 2>&1
    echo "selftest exit $?"; tail -25 "$OUT/selftest.log"
    cp "$OUT"/selftest/selftest.json "$OUT"/selftest/selftest.html "$OUT"/ 2>/dev/null
    ;;
*)
    echo "usage: bash benchmarks/gpu_session.sh all|steps|served|overlap|attention|selftest|wheels" >&2; exit 2
    ;;
esac
