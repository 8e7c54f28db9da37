#!/usr/bin/env bash
# Run 169 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any card: where a dense decode step of 4 or 8 rows
# (--batch) spends its time beyond the one-row step's: run169_list.txt, then
# the kernel tables of run169_trace.txt's steps (trace.tgz). No tests.
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_cupti_trace"
RUN_LIST=results/bench/run169_list.txt RUN_TRACE=results/bench/run169_trace.txt \
  RUN_CTEST="-R NoTestHasThisName" RUN_PACK_LOGS=1 \
  bash results/bench/device_run.sh
exit 0
