#!/usr/bin/env bash
# Run 155 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run155_list.txt (the head-ready A/B with the release add)
# and the head-order tests.
RUN_LIST=results/bench/run155_list.txt RUN_NCU=0 \
  RUN_CTEST="-R HeadReady|HeadOrder" bash results/bench/device_run.sh
