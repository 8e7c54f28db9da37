#!/usr/bin/env bash
# Run 154 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the head-ready A/B of run154_list.txt (issue 5 item 2) with
# it keeps every bit, and radix against value bins for LazyLLM's choice (16k
# keys=cached and the top_count kernel benchmarks).
RUN_LIST=results/bench/run154_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=top_count \
  RUN_CTEST="-R Gemv|HeadReady|EverySwitch|CudaSwitches|TopCount|TopK|TokenOps" \
  bash results/bench/device_run.sh
