#!/usr/bin/env bash
# Run 39 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (`ctest -L cuda -E ModelSized`), memcheck
# of the sparse-op and pipelined-decode tests, and the benchmarks of
# run39_list.txt.
RUN_LIST=results/bench/run39_list.txt \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test cuda_pipelined_decode_test" \
  RUN_NCU=0 bash results/bench/device_run.sh
