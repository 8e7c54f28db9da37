#!/usr/bin/env bash
# Run 14 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: build + ctest -L cuda + the model benchmarks of
# run14_list.txt, then the ncu profile of DejaVu decode steps
# (results/profile/ncu_dejavu.sh).
set -uo pipefail
export DYNSPARSE_GIT_SHA="${DYNSPARSE_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null)}"
DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 \
  DS_CUDA_CTEST_ARGS="-R SparseOps|Lazy|CudaBackend" DS_CUDA_MODEL_BENCH=1 \
  DS_CUDA_BENCH_LIST=results/bench/run14_list.txt \
  DS_CUDA_SANITIZE=1 DS_CUDA_SANITIZE_SHARDS=4 DS_CUDA_SANITIZE_TIMEOUT=75 \
  DS_CUDA_SANITIZE_TESTS="cuda_sparse_ops_test" \
  bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
echo "run_on_gpu.sh exit $?" >>"$OUT/run.log"
bash results/profile/ncu_dejavu.sh >>"$OUT/run.log" 2>&1
cd "$OUT" && tar czf ncu_dejavu.tgz ncu_dejavu_*.csv && rm -f ncu_dejavu_*.csv
exit 0
