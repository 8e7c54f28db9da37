#!/usr/bin/env bash
# Run 51 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op CUDA tests (`ctest -L cuda -R SparseOps`)
# after TopK's two kernels share one FindThresholdBin, and memcheck of the
# sparse-op tests; no benchmarks.
DS_CUDA_DEJAVU_BENCH=0 RUN_LIST=/dev/null RUN_CTEST="-R SparseOps" \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
