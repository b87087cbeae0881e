#!/usr/bin/env bash
# On a machine with CUDA: grade every exercise's reference on the GPU (fp32, and bf16 where a
# model runs; tensor-parallel's ranks spawned, on NCCL when each has a GPU of its own), then run
# the speculative-decoding, batch-engine, tensor-parallel, sampling and decode-attention benches on
# cuda; one summary.
# Meant to finish within 8 minutes on one H200, plus up to 6 for tensor-parallel (untried on a GPU
# yet). Usage: bash scripts/gpu_check.sh [--quick]
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
py=.venv/bin/python
status=0
echo "== references graded on cuda"
timeout 300 $py scripts/gpu_check.py --skip tensor-parallel --skip decode-attention || status=1
echo "== decode-attention graded on cuda (Triton compiles each kernel; levels 2-4 time the speed case)"
timeout 240 $py scripts/gpu_check.py --exercise decode-attention || status=1
echo "== tensor-parallel graded on cuda (ranks spawned: each imports torch and starts CUDA)"
timeout 240 $py scripts/gpu_check.py --exercise tensor-parallel || status=1
echo "== bench/spec_decode.py --device cuda"
timeout 120 $py bench/spec_decode.py --device cuda --repeats 3 || status=1
echo "== bench/batch_engine.py --device cuda --quick"
timeout 120 $py bench/batch_engine.py --device cuda --quick || status=1
echo "== bench/tensor_parallel.py --device cuda (NCCL where each rank has a GPU, else gloo)"
timeout 120 $py bench/tensor_parallel.py --device cuda --worlds 1,2 --repeats 1 || status=1
echo "== bench/sampling.py --device cuda --quick"
timeout 120 $py bench/sampling.py --device cuda --quick || status=1
echo "== bench/decode_attention.py --device cuda (ms per call, torch's, the bandwidth roofline's share)"
timeout 120 $py bench/decode_attention.py --device cuda || status=1
echo "== gpu_check: exit $status"
exit $status
