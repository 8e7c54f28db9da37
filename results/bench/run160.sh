#!/usr/bin/env bash
# Run 160 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run160_list.txt with only the benchmark built and no tests
# (run 157 ran them on this code), for a call with ~3 minutes left.
export DS_CUDA_TARGETS="dynsparse-bench"
RUN_LIST=results/bench/run160_list.txt RUN_NCU=0 RUN_CTEST="-R NoTestHasThisName" \
  bash results/bench/device_run.sh
