#!/usr/bin/env bash
# Run 44 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the pipelined-decode tests and the LazyLLM decode
# benchmarks of run44_list.txt.
RUN_LIST=results/bench/run44_list.txt RUN_CTEST="-R Pipelined" RUN_NCU=0 \
  bash results/bench/device_run.sh
