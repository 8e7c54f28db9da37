#!/usr/bin/env bash
# The H200 run of issue 7 (device tool, from a copy of this worktree with
# build_cuda_deps linked in): the token-op CUDA tests and the attention tests,
# then dynsparse-bench on the lines of h200_list.txt, and a summary table
# (results/lazyllm/summarize_h200.py) of TTFT speedup vs the ideal.
set -uo pipefail
cd "$(dirname "$0")/../.."
export DS_CUDA_TARGETS="cuda_token_ops_test cuda_attention_test dynsparse-bench"
export DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1
export DS_CUDA_CTEST_ARGS="${DS_CUDA_CTEST_ARGS:--R TokenOps|KeyedAttention|AttentionTest}"
export DS_CUDA_MODEL_BENCH=1
export DS_CUDA_BENCH_LIST="${DS_CUDA_BENCH_LIST:-results/lazyllm/h200_list.txt}"
bash kernels/cuda/run_on_gpu.sh
status=$?
python3 results/lazyllm/summarize_h200.py "$OUT/bench.jsonl" | tee "$OUT/summary.md"
exit $status
