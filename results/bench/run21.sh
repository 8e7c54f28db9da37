#!/usr/bin/env bash
# Run 21 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op and backend tests, memcheck of the sparse-op
# tests, the benchmarks of run21_list.txt, the Nsight Compute sections of the
# lazy K/V, O-projection and TopK kernels.
RUN_LIST=results/bench/run21_list.txt RUN_CTEST="-R SparseOps|CudaBackend|Lazy" \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
bash results/profile/ncu_dejavu_kernels.sh >>"$OUT/run.log" 2>&1
gzip -f "$OUT/ncu_kernels.txt"
