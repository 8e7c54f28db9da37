#!/usr/bin/env bash
# Run 17 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test, the benchmarks of run17_list.txt, then the
# Nsight Compute sections of the lazy K/V, O-projection and TopK kernels
# (results/profile/ncu_dejavu_kernels.sh) into $OUT/ncu_kernels.txt.
RUN_LIST=results/bench/run17_list.txt RUN_NCU=0 bash results/bench/device_run.sh
bash results/profile/ncu_dejavu_kernels.sh >>"$OUT/run.log" 2>&1
gzip -f "$OUT/ncu_kernels.txt"
