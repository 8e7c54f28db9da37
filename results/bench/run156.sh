#!/usr/bin/env bash
# Run 156 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run156_list.txt (run 153's head-ready A/B and issue 7 item 3
# table on the current code) with the GEMV, backend and switch tests, and the
# top_count kernel benchmarks.
RUN_LIST=results/bench/run156_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=top_count \
  RUN_CTEST="-R Gemv|HeadReady|HeadOrder|EverySwitch|CudaSwitches|TopCount|TopK|TokenOps" \
  bash results/bench/device_run.sh
