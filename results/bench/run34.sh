#!/usr/bin/env bash
# Run 34 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (`ctest -L cuda -E ModelSized`), memcheck
# of the sparse-op, backend and norm tests, the benchmarks of run34_list.txt
# and the timelines of run34_trace.txt.
RUN_LIST=results/bench/run34_list.txt RUN_TRACE=results/bench/run34_trace.txt \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test cuda_backend_test cuda_norms_test" \
  RUN_NCU=0 bash results/bench/device_run.sh
