#!/usr/bin/env bash
# Run 130 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run 129's staged o-projection lost (4.44 against 3.65 ms)
# with its blocks kept off the SMs that ran the attention. Here every decode
# kernel gets one shared-memory carveout (temporary DS_EXPERIMENT_CARVEOUT),
# so none waits for an SM to drain and change it. The GEMV tests (the
# 48 KiB launch fixed), run130_list.txt and three timelines.
RUN_LIST=results/bench/run130_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|GraphOps" RUN_TRACE=results/bench/run130_trace.txt \
  bash results/bench/device_run.sh
exit 0
