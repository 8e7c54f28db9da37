#!/usr/bin/env bash
# Run 66 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the decode stack's CUDA tests, then run66_list.txt (the
# decode stack against the layer kernels).
RUN_LIST=results/bench/run66_list.txt RUN_CTEST="-R DecodeStack --timeout 120" \
  RUN_NCU=0 bash results/bench/device_run.sh
