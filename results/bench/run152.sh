#!/usr/bin/env bash
# Run 152 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the top_count kernel benchmarks (radix against value bins),
# the TopCount tests (TopKRows' choice against the host's among them) and
# run152_list.txt, for the few minutes of device time left.
RUN_LIST=results/bench/run152_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=top_count \
  RUN_CTEST="-R TopCount" bash results/bench/device_run.sh
