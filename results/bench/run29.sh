#!/usr/bin/env bash
# Run 29 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the benchmarks of run29_list.txt with the host time of
# each decode step (its pass over the graph's ops and the graph launch).
RUN_LIST=results/bench/run29_list.txt RUN_CTEST="-R CudaSwitches" RUN_NCU=0 \
  bash results/bench/device_run.sh
