#!/usr/bin/env bash
# Run 22 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test, memcheck of the sparse-op
# tests, the benchmarks of run22_list.txt, the Nsight Compute sections of the
# lazy K/V, O-projection and TopK kernels.
RUN_LIST=results/bench/run22_list.txt \
  RUN_SANITIZE_TESTS="cuda_sparse_ops_test" RUN_NCU=0 \
  bash results/bench/device_run.sh
bash results/profile/ncu_dejavu_kernels.sh >>"$OUT/run.log" 2>&1
gzip -f "$OUT/ncu_kernels.txt"
