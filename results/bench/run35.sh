#!/usr/bin/env bash
# Run 35 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (`ctest -L cuda -E ModelSized`), memcheck
# of the pipelined-decode and backend tests, and the benchmarks of
# run35_list.txt (pipelined greedy decode, and the fixed-ids loop beside it).
RUN_LIST=results/bench/run35_list.txt \
  RUN_SANITIZE_TESTS="cuda_pipelined_decode_test cuda_backend_test" \
  RUN_NCU=0 bash results/bench/device_run.sh
