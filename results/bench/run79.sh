#!/usr/bin/env bash
# Run 79 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the attention, flash prefill, token-path and linear CUDA
# tests after the tensor-core attention kernels share their query-fragment
# load and online-softmax step (mma_f16.cuh); no benchmarks.
RUN_LIST=results/bench/run79_list.txt \
  RUN_CTEST="-R TokenOps|Attention|FlashPrefill|Linear --timeout 200" \
  RUN_NCU=0 bash results/bench/device_run.sh
