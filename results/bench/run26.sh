#!/usr/bin/env bash
# Run 26 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op and backend tests, then kernel timelines
# (tools/cupti_trace) of the decode steps of run26_trace.txt.
RUN_LIST=/dev/null RUN_TRACE=results/bench/run26_trace.txt \
  RUN_CTEST="-R SparseOps|CudaBackend|Lazy" RUN_NCU=0 \
  bash results/bench/device_run.sh
