#!/usr/bin/env bash
# Run 23 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op and backend
# tests, the benchmarks of run23_list.txt.
RUN_LIST=results/bench/run23_list.txt \
  RUN_CTEST="-R SparseOps|CudaBackend|Lazy" RUN_NCU=0 \
  bash results/bench/device_run.sh
