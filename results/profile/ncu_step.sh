#!/usr/bin/env bash
# Per-kernel durations of one Llama-2-7B decode step and one prefill layer,
# measured with Nsight Compute (kernels serialised, clocks left alone), to see
# where the time goes. Run from the repository root on the GPU machine after
# `kernels/cuda/run_on_gpu.sh` built dynsparse-bench (build-cuda-gpu/):
#   DS_CUDA_TARGETS=dynsparse-bench DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 \
#   DS_CUDA_SKIP_PLANS=1 DS_CUDA_CTEST_ARGS="-R none" bash kernels/cuda/run_on_gpu.sh
#   bash results/profile/ncu_step.sh
# Writes $OUT/ncu_decode.csv and $OUT/ncu_prefill.csv (one row per kernel).
set -uo pipefail
bench=build-cuda-gpu/dynsparse-bench
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
prof() {  # out_file skip count bench-args...
  local out="$1" skip="$2" count="$3"
  shift 3
  timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum \
    --launch-skip "$skip" --launch-count "$count" --csv --page raw \
    "$bench" "$@" >"$out" 2>"$out.err"
  echo "ncu $* -> rc $? $(wc -l <"$out") lines"
}
start=$SECONDS
prof "$OUT/ncu_decode.csv" 0 6000 --model random:llama-2-7b --device cuda \
  --dtype f16 --prompt 128 --new 4 --repeats 1 --no-cuda-graphs
prof "$OUT/ncu_prefill.csv" 0 1500 --model random:llama-2-7b --device cuda \
  --dtype f16 --prompt 8192 --new 1 --repeats 1 --no-cuda-graphs
echo "profiling took $((SECONDS - start)) s"
