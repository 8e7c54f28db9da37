#!/usr/bin/env bash
# Run 73 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the attention and token-path CUDA tests, the attention
# kernel benchmarks (staged vs pipelined split kernels), then run73_list.txt
# (lazyllm keys=cached with and without the pipelined kernel, 4k and 16k).
RUN_LIST=results/bench/run73_list.txt \
  RUN_CTEST="-R TokenOps|Attention --timeout 200" RUN_KERNEL_BENCH=attention \
  RUN_NCU=0 bash results/bench/device_run.sh
