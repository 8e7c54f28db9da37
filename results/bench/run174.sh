#!/usr/bin/env bash
# Run 174 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any card: the GEMV tests (the one-wave build's bits
# among them), run174_list.txt (DEEP_MMA off / on), then the Llama-2-7B GEMV
# shapes at batch 4 and 8 in the kernel benchmark with DEEP_MMA off and on
# (gemv_deep0.json, gemv_deep1.json).
export DS_CUDA_TARGETS="dynsparse-bench cuda_gemv_test dynsparse_cuda_benchmarks"
RUN_LIST=results/bench/run174_list.txt RUN_CTEST="-R Gemv" RUN_PACK_LOGS=1 \
  bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for deep in 0 1; do
  DYNSPARSE_CUDA_DEEP_MMA=$deep timeout 100 \
    build-cuda-gpu/kernels_cuda/dynsparse_cuda_benchmarks \
    --benchmark_filter='gemv_llama/f16/.*/b[48]' --benchmark_format=json \
    --benchmark_out="$OUT/gemv_deep$deep.json" >/dev/null 2>>"$OUT/gemv_bench.log"
  echo "gemv bench deep=$deep rc $?" >>"$OUT/run.log"
done
exit 0
