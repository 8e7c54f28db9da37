#!/usr/bin/env bash
# Run 87 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the f16 KV cache after run 86's fixes (the decode kernel
# loads runs of halves, the f16 pipelined ring is six stages deep). The whole
# CUDA suite, the attention kernel benchmarks on f32 and f16 caches, and
# run87_list.txt (issue 7 item 3 at 4k/8k/16k on f16 caches; f32 A/B).
RUN_LIST=results/bench/run87_list.txt RUN_NCU=0 RUN_KERNEL_BENCH=attention \
  RUN_CTEST="-E ModelSized --timeout 300" bash results/bench/device_run.sh
