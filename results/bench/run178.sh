#!/usr/bin/env bash
# Run 178 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only (issues 5 and 7 set their targets there;
# elsewhere it prints the card and stops): run177_list.txt without its OPT-66B
# lines (issue 7 item 3's keys=cached decode at 4k / 8k / 16k with the
# one-wave tensor-core GEMV build and, at 8k, without; 4-row steps; issue 5
# item 2's prompt-128 decode), after the plan and SASS-order GEMV tests.
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200, skipped:"
  nvidia-smi -L
  exit 0
fi
grep -v opt-66b results/bench/run177_list.txt >/tmp/run178_list.txt
export DS_CUDA_TARGETS="dynsparse-bench cuda_gemv_test"
RUN_LIST=/tmp/run178_list.txt \
  RUN_CTEST="-R OneWaveBuild|PdlLoadOrder" RUN_PACK_LOGS=1 \
  bash results/bench/device_run.sh
exit 0
