#!/usr/bin/env bash
# Run 30 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the backend and sparse-op tests (graph replays against the
# CPU), the benchmarks of run30_list.txt (first predictor projection as side work;
# OPT-66B twice) and the timelines of run30_trace.txt.
RUN_LIST=results/bench/run30_list.txt RUN_TRACE=results/bench/run30_trace.txt \
  RUN_CTEST="-R SparseOps|CudaBackend|Lazy" RUN_NCU=0 \
  bash results/bench/device_run.sh
