#!/usr/bin/env bash
# Run 38 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the sparse-op and pipelined-decode tests, and the lazy K/V
# occupancy A/B of run38_list.txt.
RUN_LIST=results/bench/run38_list.txt RUN_CTEST="-R SparseOps|Pipelined" \
  RUN_NCU=0 bash results/bench/device_run.sh
