#!/usr/bin/env bash
# Run 81 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the token-path CUDA tests after the host-side changes (the
# per-layer token loops branch-free, lazyllm's kept rows ordered without a
# sort, the next layer's probe read while this layer's MLP runs),
# run81_list.txt (issue 7 item 3 at 4k, as run 78, with an A/B of the early
# probe read), then the kernel tables of run81_trace.txt's eager steps
# (results/profile/kernel_time.sh).
RUN_LIST=results/bench/run81_list.txt RUN_NCU=0 \
  RUN_CTEST="-R TokenOps|Attention --timeout 200" \
  bash results/bench/device_run.sh
KT_LIST=results/bench/run81_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
