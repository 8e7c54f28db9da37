#!/usr/bin/env bash
# Run 14 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op, lazy K/V and backend tests, memcheck of the
# sparse-op tests, the benchmarks of run14_list.txt and the DejaVu ncu
# profile.
RUN_LIST=results/bench/run14_list.txt RUN_CTEST="-R SparseOps|Lazy|CudaBackend" \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=1 exec bash results/bench/device_run.sh
