#!/usr/bin/env bash
# One device call of the bench runs (run11.sh ... name their settings), from
# the repository root on the GPU machine, carrying build_cuda_deps:
# kernels/cuda/run_on_gpu.sh builds, runs `ctest -L cuda $RUN_CTEST`, the
# model benchmarks of $RUN_LIST and, with $RUN_SANITIZE_TESTS, memcheck of
# those test binaries (4 shards, 75 s each); RUN_NCU=1 then profiles DejaVu
# decode steps (results/profile/ncu_dejavu.sh) into $OUT/ncu_dejavu.tgz;
# RUN_TRACE=list records the kernel timelines of the list's decode steps
# (results/profile/trace_decode.sh) into $OUT/trace.tgz; RUN_KERNEL_BENCH=regex
# runs the kernel benchmarks it matches (cuda_bench.json, cuda_bench.log);
# RUN_PACK_LOGS=1 packs the build, parity, ctest and ptxas logs into
# $OUT/logs.tgz at the end. Everything lands in $OUT (at most 8 files come
# back).
set -uo pipefail
export DYNSPARSE_GIT_SHA="${DYNSPARSE_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null)}"
sanitize=()
if [[ -n "${RUN_SANITIZE_TESTS:-}" ]]; then
  sanitize=(DS_CUDA_SANITIZE=1 DS_CUDA_SANITIZE_SHARDS=4
            DS_CUDA_SANITIZE_TIMEOUT=75
            "DS_CUDA_SANITIZE_TESTS=$RUN_SANITIZE_TESTS")
fi
kernel_bench=(DS_CUDA_SKIP_BENCH=1)
[[ -n "${RUN_KERNEL_BENCH:-}" ]] &&
  kernel_bench=(DS_CUDA_SKIP_BENCH=0 "DS_CUDA_BENCH_FILTER=$RUN_KERNEL_BENCH")
env DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_PLANS=1 "${kernel_bench[@]}" \
  "DS_CUDA_CTEST_ARGS=${RUN_CTEST:--E ModelSized}" DS_CUDA_MODEL_BENCH=1 \
  "DS_CUDA_BENCH_LIST=$RUN_LIST" "${sanitize[@]}" \
  bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
echo "run_on_gpu.sh exit $?" >>"$OUT/run.log"
if [[ "${RUN_NCU:-0}" == 1 ]]; then
  bash results/profile/ncu_dejavu.sh >>"$OUT/run.log" 2>&1
  cd "$OUT" && tar czf ncu_dejavu.tgz ncu_dejavu_*.csv && rm -f ncu_dejavu_*.csv
fi
if [[ -n "${RUN_TRACE:-}" ]]; then
  TRACE_LIST="$RUN_TRACE" bash results/profile/trace_decode.sh >>"$OUT/run.log" 2>&1
fi
if [[ "${RUN_PACK_LOGS:-0}" == 1 ]]; then
  (cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log ptxas_gemv.txt \
    2>/dev/null; rm -f build.log parity.log ctest.log ptxas_gemv.txt)
fi
exit 0
