#!/usr/bin/env bash
# Run 28 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the backend and sparse-op tests (graph replays against the
# CPU), the benchmarks of run28_list.txt (kernel-only captured steps,
# A/B) and the timelines of run28_trace.txt.
RUN_LIST=results/bench/run28_list.txt RUN_TRACE=results/bench/run28_trace.txt \
  RUN_CTEST="-R SparseOps|CudaBackend|Lazy" RUN_NCU=0 \
  bash results/bench/device_run.sh
