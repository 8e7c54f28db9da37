#!/usr/bin/env bash
# Run 151 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run 150 cut to what ~5 minutes of device time hold: the
# token-choice and switch tests, the top_count kernel benchmarks and
# run151_list.txt.
RUN_LIST=results/bench/run151_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=top_count \
  RUN_CTEST="-R TopCount|CudaSwitches" bash results/bench/device_run.sh
