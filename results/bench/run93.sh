#!/usr/bin/env bash
# Run 93 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: DejaVu's lazy K/V window (16, 8, 4) against dense decode
# (run93_list.txt), with the sparse and lazy K/V CUDA tests.
RUN_LIST=results/bench/run93_list.txt RUN_NCU=0 RUN_CTEST="-R Sparse|LazyKv" \
  bash results/bench/device_run.sh
