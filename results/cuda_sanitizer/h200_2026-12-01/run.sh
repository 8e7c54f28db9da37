#!/usr/bin/env bash
# Racecheck of the kernels new since the full 2026-11-30 sweep (flash
# prefill, fused new-row decode attention + parallel merge, GEMVs with the
# norm / residual / gated pairs), then an ncu per-kernel profile of the
# merged tree (results/profile/ncu_step.sh). From the repository root on the
# GPU machine, carrying build_cuda_deps.
set -uo pipefail
DS_CUDA_TARGETS="cuda_flash_prefill_test cuda_attention_test cuda_gemv_test cuda_token_ops_test dynsparse-bench" \
  DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 \
  DS_CUDA_CTEST_ARGS="-R ^NoSuchTest$" bash kernels/cuda/run_on_gpu.sh >"$OUT/build.log" 2>&1
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu"
tests=build-cuda-gpu/tests_cuda
mkdir -p "$OUT/racecheck"
start=$SECONDS
run() {  # binary filter
  for s in 0 1 2 3 4 5; do
    (GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$s timeout 110 \
      compute-sanitizer --tool racecheck --error-exitcode 9 "$tests/$1" \
      "--gtest_filter=$2" >"$OUT/racecheck/$1_$s.log" 2>&1
     echo "$1 shard $s: exit $?" >>"$OUT/racecheck/summary.txt") &
  done
}
run cuda_flash_prefill_test '-*LlamaShape*'
run cuda_attention_test '-*Timing*'
run cuda_gemv_test '*FusedNorm*:*Accumulate*:*GatedPairs*'
run cuda_token_ops_test '*'
wait
echo "racecheck took $((SECONDS - start)) s" >>"$OUT/racecheck/summary.txt"
(cd "$OUT" && tar czf racecheck.tgz racecheck && rm -rf racecheck)
bash results/profile/ncu_step.sh
(cd "$OUT" && gzip -f ncu_decode.csv ncu_prefill.csv)
