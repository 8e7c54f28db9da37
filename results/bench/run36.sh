#!/usr/bin/env bash
# Run 36 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op, backend and pipelined-decode tests, memcheck
# of the sparse-op tests, and the DejaVu benchmarks of run36_list.txt.
RUN_LIST=results/bench/run36_list.txt \
  RUN_CTEST="-R SparseOps|CudaBackend|Pipelined" \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" \
  RUN_NCU=0 bash results/bench/device_run.sh
