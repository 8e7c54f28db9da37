#!/usr/bin/env bash
# Run 27 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the backend and sparse-op tests (graph replays against the
# CPU), the benchmarks of run27_list.txt (one staging copy per captured step,
# A/B) and the timelines of run27_trace.txt.
RUN_LIST=results/bench/run27_list.txt RUN_TRACE=results/bench/run27_trace.txt \
  RUN_CTEST="-R SparseOps|CudaBackend|Lazy" RUN_NCU=0 \
  bash results/bench/device_run.sh
