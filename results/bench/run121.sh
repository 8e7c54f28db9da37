#!/usr/bin/env bash
# Run 121 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the residual-adding decode GEMVs (o-projection, down / fc2,
# 2048 blocks of 2 rows at 4 warps a row, 2.2 waves at 7 blocks an SM) with
# 2 and 1 warps a row (DYNSPARSE_CUDA_RESIDUAL_GEMV_WARPS): the GEMV and switch
# tests, run121_list.txt's dense decode of Llama-2-7B and OPT-6.7B at 0, 2
# and 1, alternated twice.
RUN_LIST=results/bench/run121_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|CudaSwitches" bash results/bench/device_run.sh
exit 0
