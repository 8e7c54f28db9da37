#!/usr/bin/env bash
# Run 138 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: dense decode of Llama-2-7B and OPT-6.7B (run138_list.txt,
# issue 5 item 2) after the GEMV, attention and backend files were split by
# purpose, against run 134's 3.625 / 3.843 ms; the GEMV tests; and the kernel
# tables of the last 20 of 256 eager decode steps (run138_trace.txt): where a
# keys=cached step spends its time once few tokens are left to revive, against
# dense run eagerly; and keys=cached at 4k and 16k with the token profile.
RUN_LIST=results/bench/run138_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv --timeout 300" \
  bash results/bench/device_run.sh
KT_LIST=results/bench/run138_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
