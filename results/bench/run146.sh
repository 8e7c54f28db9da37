#!/usr/bin/env bash
# Run 146 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run 144's defaults against the earlier ones on one machine
# (run146_list.txt), then the kernel table of late keys=cached steps at 16k
# under the new defaults (run143_trace.txt's entry).
RUN_LIST=results/bench/run146_list.txt RUN_NCU=0 \
  RUN_CTEST="-R CudaSwitches" bash results/bench/device_run.sh
KT_LIST=results/bench/run143_trace.txt bash results/profile/kernel_time.sh \
  >>"$OUT/run.log" 2>&1
