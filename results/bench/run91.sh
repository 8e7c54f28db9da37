#!/usr/bin/env bash
# Run 91 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the review's mends (one K/V cache pair check; the f16
# pipelined ring back to three stages). The tests of the kernels they touch;
# no benchmarks.
RUN_LIST=/dev/null RUN_NCU=0 \
  RUN_CTEST="-R TokenOps|FlashPrefill|Attention|FusedOps|SparseOps --timeout 200" \
  bash results/bench/device_run.sh
