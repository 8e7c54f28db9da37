#!/usr/bin/env bash
# Run 77 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the whole CUDA suite at this session's last code, the
# attention kernel benchmarks, then run77_list.txt (dense decode at prompt
# 128; issue 7 item 3 at 4k, 8k and 16k with both lazyllm keys settings).
RUN_LIST=results/bench/run77_list.txt RUN_KERNEL_BENCH=attention \
  RUN_NCU=0 bash results/bench/device_run.sh
