#!/usr/bin/env bash
# Run 75 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the attention and token-path CUDA tests, the attention
# kernel benchmarks (staged vs pipelined with key-partitioned warps) and
# run75_list.txt (lazyllm at 4k and 16k, one token profile at 16k).
RUN_LIST=results/bench/run75_list.txt \
  RUN_CTEST="-R TokenOps|Attention --timeout 200" RUN_KERNEL_BENCH=attention \
  RUN_NCU=0 bash results/bench/device_run.sh
