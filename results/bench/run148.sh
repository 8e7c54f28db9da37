#!/usr/bin/env bash
# Run 148 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: LazyLLM's choice on the device (Backend::TopCount) against
# the host's (DYNSPARSE_CUDA_TOP_COUNT=0) on one machine (run148_list.txt),
# the TopCount, token-op, switch and CudaBackend tests (the graph counts of
# long and short decode steps among them), the top_count kernel
# benchmarks, then the kernel table of late keys=cached steps at 16k
# for the idle time left after each selection, and the prompt-128 decode
# tables of Llama-2-7B and OPT-6.7B for issue 5 (run148_trace.txt).
RUN_LIST=results/bench/run148_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=top_count \
  RUN_CTEST="-R TopCount|TokenOps|CudaSwitches|CudaBackendTest" bash results/bench/device_run.sh
KT_LIST=results/bench/run148_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
