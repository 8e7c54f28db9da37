#!/usr/bin/env bash
# Run 94 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: issue 6's decode table with the dejavu method (lookahead
# predictors as side work) at lazy K/V windows 8 and 16 (run94_list.txt),
# with the sparse and lazy K/V CUDA tests.
RUN_LIST=results/bench/run94_list.txt RUN_NCU=0 RUN_CTEST="-R Sparse|LazyKv" \
  bash results/bench/device_run.sh
