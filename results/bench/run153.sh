#!/usr/bin/env bash
# Run 153 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the head-ready A/B of run153_list.txt (issue 5 item 2) with
# the GEMV, backend and switch tests that check it keeps every bit, then run
# 150's LazyLLM table (issue 7 item 3) and the top_count kernel benchmarks.
RUN_LIST=results/bench/run153_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=top_count \
  RUN_CTEST="-R Gemv|HeadReady|EverySwitch|CudaSwitches|TopCount|TopK|TokenOps" \
  bash results/bench/device_run.sh
