#!/usr/bin/env bash
# Run 159 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run159_list.txt with only the benchmark built and no tests
# (run 157 ran them on this code), for a call with ~5 minutes left.
export DS_CUDA_TARGETS="dynsparse-bench"
RUN_LIST=results/bench/run159_list.txt RUN_NCU=0 RUN_CTEST="-R NoTestHasThisName" \
  bash results/bench/device_run.sh
