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
  bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu"
tests=build-cuda-gpu/tests_cuda
mkdir -p "$OUT/memcheck"
start=$SECONDS
for t in cuda_flash_prefill_test cuda_attention_test cuda_token_ops_test; do
  filter='*'
  for s in 0 1 2 3; do
    (GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$s timeout 75 \
      compute-sanitizer --tool memcheck --error-exitcode 9 "$tests/$t" \
      "--gtest_filter=$filter" >"$OUT/memcheck/${t}_$s.log" 2>&1
     echo "$t shard $s: exit $?" >>"$OUT/memcheck/summary.txt") &
  done
done
wait
echo "memcheck took $((SECONDS - start)) s" >>"$OUT/memcheck/summary.txt"
cd "$OUT" && tar czf memcheck.tgz memcheck && rm -rf memcheck
