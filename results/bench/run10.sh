#!/usr/bin/env bash
# Run 10 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: build + ctest -L cuda + the model benchmarks of
# run10_list.txt, then compute-sanitizer memcheck of the attention kernels
# refactored in 6a6af3e (4 gtest shards per binary side by side, 75 s cap).
set -uo pipefail
export DYNSPARSE_GIT_SHA="${DYNSPARSE_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null)}"
DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 \
  DS_CUDA_CTEST_ARGS="-E ModelSized" DS_CUDA_MODEL_BENCH=1 \
  DS_CUDA_BENCH_LIST=results/bench/run10_list.txt \
  DS_CUDA_SANITIZE=1 DS_CUDA_SANITIZE_SHARDS=4 DS_CUDA_SANITIZE_TIMEOUT=75 \
  DS_CUDA_SANITIZE_TESTS="cuda_flash_prefill_test cuda_attention_test cuda_token_ops_test" \
  bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
