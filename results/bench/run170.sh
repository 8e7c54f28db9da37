#!/usr/bin/env bash
# Run 170 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any card: the GEMV tests, the few-row and switch model
# tests and the token-op tests (segmented group outputs), run170_list.txt
# (ROW_GROUPS on / off at 4 and 8 rows a step and keys=cached 8k), then the
# kernel tables of run170_trace.txt's steps (trace.tgz): where a step of 4
# or 8 rows spends its time beyond a one-row step's.
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_cupti_trace cuda_gemv_test \
cuda_backend_test cuda_token_ops_test"
RUN_LIST=results/bench/run170_list.txt RUN_TRACE=results/bench/run170_trace.txt \
  RUN_CTEST="-R Gemv|FewRowSteps|EverySwitch|TokenOps" RUN_PACK_LOGS=1 \
  bash results/bench/device_run.sh
exit 0
