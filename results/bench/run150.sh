#!/usr/bin/env bash
# Run 150 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the token-choice, TopK and switch tests, the top_count
# kernel benchmarks (radix select against TopKRows' value bins, on uniform and
# attention-shaped scores) and issue 7 item 3's table with the choice by
# either kernel and on the host (run150_list.txt).
RUN_LIST=results/bench/run150_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=top_count \
  RUN_CTEST="-R TopCount|TopK|TokenOps|CudaSwitches" \
  bash results/bench/device_run.sh
