#!/usr/bin/env bash
# Run 147 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the token profiles of a late-16k keys=cached decode under
# run 144's defaults (run147_list.txt), for the host's share of the idle device
# time run 146's kernel table found after each selection.
RUN_LIST=results/bench/run147_list.txt RUN_NCU=0 \
  RUN_CTEST="-R CudaSwitches" bash results/bench/device_run.sh
