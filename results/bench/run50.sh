#!/usr/bin/env bash
# Run 50 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test (`ctest -L cuda -E ModelSized`) after the
# TopK kernels' shared helpers and the shared cluster launch config, and
# memcheck of the sparse-op tests; no benchmarks.
DS_CUDA_DEJAVU_BENCH=0 RUN_LIST=/dev/null \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
