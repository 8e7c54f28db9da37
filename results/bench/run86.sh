#!/usr/bin/env bash
# Run 86 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the f16 KV cache. The whole CUDA suite, the attention
# kernel benchmarks on f32 and f16 caches, and run86_list.txt (f16 against
# f32 caches at 4k and 16k, dense and lazyllm keys=cached; dense at 128).
RUN_LIST=results/bench/run86_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=attention \
  RUN_CTEST="-E ModelSized --timeout 300" bash results/bench/device_run.sh
