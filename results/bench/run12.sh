#!/usr/bin/env bash
# Run 12 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the whole CUDA suite, memcheck of the norm and sparse-op
# tests, the benchmarks of run12_list.txt and the DejaVu ncu profile.
RUN_LIST=results/bench/run12_list.txt RUN_CTEST="-E ModelSized" \
  RUN_SANITIZE_TESTS="cuda_norms_test cuda_sparse_ops_test" RUN_NCU=1 exec bash results/bench/device_run.sh
