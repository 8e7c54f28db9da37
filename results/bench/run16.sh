#!/usr/bin/env bash
# Run 16 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op, backend and lazy K/V tests, memcheck of the
# sparse-op tests, the benchmarks of run16_list.txt.
RUN_LIST=results/bench/run16_list.txt RUN_CTEST="-R SparseOps|CudaBackend|Lazy" \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  exec bash results/bench/device_run.sh
