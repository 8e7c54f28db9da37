#!/usr/bin/env bash
# Run 33 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the norm, backend and sparse-op tests, the benchmarks of
# run33_list.txt and the timeline of run33_trace.txt (NormVecKernel).
RUN_LIST=results/bench/run33_list.txt RUN_TRACE=results/bench/run33_trace.txt \
  RUN_CTEST="-R Norms|SparseOps|CudaBackend|Lazy|Gemv" RUN_NCU=0 \
  bash results/bench/device_run.sh
