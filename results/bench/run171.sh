#!/usr/bin/env bash
# Run 171 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any card: the GEMV, few-row, switch, greedy and
# token-op tests; run171_list.txt (keys=cached 8k with ROW_GROUPS on and
# off); the kernel table of a one-row step (trace.tgz); then the Llama-2-7B
# GEMV shapes at batch 4 in the kernel benchmark on the same card
# (cuda_bench.json), against the same kernels inside run 170's steps.
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_cupti_trace cuda_gemv_test \
cuda_backend_test cuda_token_ops_test dynsparse_cuda_benchmarks"
RUN_LIST=results/bench/run171_list.txt RUN_TRACE=results/bench/run171_trace.txt \
  RUN_CTEST="-R Gemv|FewRowSteps|EverySwitch|TokenOps|Greedy" \
  RUN_KERNEL_BENCH='gemv_llama/f16/.*/b4' RUN_PACK_LOGS=1 \
  bash results/bench/device_run.sh
exit 0
