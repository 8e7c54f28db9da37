#!/usr/bin/env bash
# Run 25 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op and backend
# tests, the benchmarks of run25_list.txt.
RUN_LIST=results/bench/run25_list.txt \
  RUN_CTEST="-R SparseOps|CudaBackend|Lazy" RUN_NCU=0 \
  bash results/bench/device_run.sh
