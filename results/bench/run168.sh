#!/usr/bin/env bash
# Run 168 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any card: the GEMV tests (the staged tensor-core
# kernel's bits against the register kernel's among them), run168_list.txt
# (dense batch 4 / 8 and keys=cached at 8k with DYNSPARSE_CUDA_GEMV_STAGES
# 0 / 3 / 4 / 6), then the tensor-core GEMV kernels alone at each ring depth
# (gemv_<stages>.json).
export DS_CUDA_TARGETS="dynsparse-bench cuda_gemv_test dynsparse_cuda_benchmarks"
RUN_LIST=results/bench/run168_list.txt RUN_CTEST="-R Gemv" RUN_PACK_LOGS=1 \
  bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench=build-cuda-gpu/kernels_cuda/dynsparse_cuda_benchmarks
for stages in 0 4 3 6; do
  DYNSPARSE_CUDA_GEMV_STAGES=$stages timeout 150 "$bench" \
    --benchmark_filter='gemv_llama|gemv_tc/bf16/(4096x4096|11008x4096|4096x11008)' \
    --benchmark_format=json --benchmark_out="$OUT/gemv_$stages.json" \
    >/dev/null 2>>"$OUT/gemv_bench.log"
  echo "gemv bench stages=$stages rc $?" >>"$OUT/run.log"
done
cd "$OUT" && tar czf gemv_bench.tgz gemv_*.json gemv_bench.log 2>/dev/null &&
  rm -f gemv_*.json gemv_bench.log
exit 0
