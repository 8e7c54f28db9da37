#!/usr/bin/env bash
# Run 32 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op and backend tests, the benchmarks of
# run32_list.txt, and Nsight Compute on the decode LayerNorm
# (results/profile/ncu_norm.sh).
RUN_LIST=results/bench/run32_list.txt RUN_CTEST="-R SparseOps|CudaBackend|Lazy" \
  RUN_NCU=0 bash results/bench/device_run.sh
bash results/profile/ncu_norm.sh >>"$OUT/run.log" 2>&1
