#!/usr/bin/env bash
# Run 74 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the attention and token-path CUDA tests, the attention
# kernel benchmarks (staged vs the pipelined ring of 3 and 6 stages, splits
# filling one wave), run74_list.txt (lazyllm at 4k, 8k, 16k) and Nsight
# Compute's view of the 3-stage ring at 16k keys ($OUT/ncu_pipelined.txt).
RUN_LIST=results/bench/run74_list.txt \
  RUN_CTEST="-R TokenOps|Attention --timeout 200" RUN_KERNEL_BENCH=attention \
  RUN_NCU=0 bash results/bench/device_run.sh
export LD_LIBRARY_PATH="$PWD/build_cuda_deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 120 ncu --kernel-name regex:PipelinedSplit --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section Occupancy --section LaunchStats \
  build-cuda-gpu/kernels_cuda/dynsparse_cuda_benchmarks \
  --benchmark_filter='attention/pipelined/rows16/cache16384/every1' \
  >"$OUT/ncu_pipelined.txt" 2>&1
echo "ncu exit $?" >>"$OUT/run.log"
