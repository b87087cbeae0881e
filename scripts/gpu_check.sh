#!/usr/bin/env bash
# On a machine with CUDA: grade every exercise's reference on the GPU (fp32, and bf16 where a
# model runs; timed cases on CUDA events, the reference against itself; tensor-parallel's ranks
# spawned, on NCCL when each has a GPU of its own), then run every bench with --device cuda; one
# table at the end. Each step has its own time limit, and the whole check 570 s
# (GPU_CHECK_BUDGET_S): a step the budget no longer covers is cut short or skipped, and fails.
#
#   bash scripts/gpu_check.sh             # here (sets up ./.venv first)
#   bash scripts/gpu_check.sh --on HOST   # from your laptop: `dojo remote setup HOST`, then this
#                                         # same check on HOST over ssh (DOJO_SSH_COMMAND honoured)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--on" ]; then
    host=${2:?usage: bash scripts/gpu_check.sh --on HOST}
    bash scripts/setup.sh
    .venv/bin/dojo remote setup "$host" || exit 1
    root=${DOJO_REMOTE_ROOT:-'$HOME/.serving-dojo'}
    # shellcheck disable=SC2086  # DOJO_SSH_COMMAND is a command and its options
    exec ${DOJO_SSH_COMMAND:-ssh} -T "$host" -- \
        "R=\"$root\"; cd \"\$R/src\" && DOJO_HOME=\"\$R/data\" PY=\"\$R/venv/bin/python\" bash scripts/gpu_check.sh"
fi
if [ -z "${PY:-}" ]; then
    bash scripts/setup.sh
    PY=.venv/bin/python
fi
status=0
table=()
deadline=$(( $(date +%s) + ${GPU_CHECK_BUDGET_S:-570} ))  # the whole check: under 10 minutes
step() {  # step NAME SECONDS COMMAND...: run it within its limit and the budget left; its row
    local name=$1 limit=$2 start rc verdict left
    shift 2
    echo "== $name"
    start=$(date +%s)
    left=$(( deadline - start ))
    if [ "$left" -le 0 ]; then
        status=1
        table+=("$(printf '%-44s %-18s %5s s' "$name" "SKIPPED (no time)" 0)")
        return
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    timeout "$limit" "$@"
    rc=$?
    case $rc in 0) verdict=pass ;; 124) verdict="TIMEOUT (${limit} s)" ;; *) verdict="FAIL (exit $rc)" ;; esac
    [ "$rc" = 0 ] || status=1
    table+=("$(printf '%-44s %-18s %5s s' "$name" "$verdict" "$(( $(date +%s) - start ))")")
}
step "references graded on cuda" 300 $PY scripts/gpu_check.py --skip tensor-parallel \
    --skip decode-attention
step "decode-attention graded on cuda (Triton)" 90 \
    $PY scripts/gpu_check.py --exercise decode-attention
step "tensor-parallel graded on cuda" 150 $PY scripts/gpu_check.py --exercise tensor-parallel
step "bench/spec_decode.py --device cuda" 60 $PY bench/spec_decode.py --device cuda --repeats 3
step "bench/batch_engine.py --device cuda" 60 $PY bench/batch_engine.py --device cuda --quick
step "bench/tensor_parallel.py --device cuda" 60 \
    $PY bench/tensor_parallel.py --device cuda --worlds 1,2 --repeats 1
step "bench/sampling.py --device cuda" 60 $PY bench/sampling.py --device cuda --quick
step "bench/paged_kv.py --device cuda" 60 $PY bench/paged_kv.py --device cuda
step "bench/decode_attention.py --device cuda" 45 $PY bench/decode_attention.py --device cuda
step "bench/decode_step.py --device cuda" 40 $PY bench/decode_step.py --device cuda --rounds 20
echo
echo "== gpu_check on $($PY -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device")' 2>/dev/null)"
printf '%-44s %-18s %7s\n' step verdict time
printf '%s\n' "${table[@]}"
echo "== gpu_check: exit $status"
exit $status
