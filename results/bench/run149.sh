#!/usr/bin/env bash
# Run 149 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the o-projection's early loads A/B of run149_list.txt (issue
# 5 item 2) and the GEMV and switch tests.
RUN_LIST=results/bench/run149_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|CudaSwitches" bash results/bench/device_run.sh
