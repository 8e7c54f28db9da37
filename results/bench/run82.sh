#!/usr/bin/env bash
# Run 82 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the token-path and session CUDA tests after a token-pruned
# step's one-row layers took the norm-fusing route, run82_list.txt (issue 7
# item 3 at 4k, 8k and 16k), then the kernel tables of run82_trace.txt's
# eager steps (results/profile/kernel_time.sh).
RUN_LIST=results/bench/run82_list.txt RUN_NCU=0 \
  RUN_CTEST="-R TokenOps|Attention|Session --timeout 200" \
  bash results/bench/device_run.sh
KT_LIST=results/bench/run82_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
