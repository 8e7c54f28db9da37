#!/usr/bin/env bash
# Run 31 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (`ctest -L cuda -E ModelSized`), memcheck
# of the sparse-op and backend tests, the benchmarks of run31_list.txt and
# the timelines of run31_trace.txt.
RUN_LIST=results/bench/run31_list.txt RUN_TRACE=results/bench/run31_trace.txt \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test cuda_backend_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
