#!/usr/bin/env bash
# Run 150 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: every CUDA test but the model-sized ones, the top_count
# kernel benchmarks (radix select against TopKRows' value bins, on uniform
# and attention-shaped scores) and issue 7 item 3's table with the choice on the device
# and on the host (run150_list.txt). run.log is tarred with the JSON so the
# files stay under the device tool's count.
RUN_LIST=results/bench/run150_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=top_count \
  bash results/bench/device_run.sh
