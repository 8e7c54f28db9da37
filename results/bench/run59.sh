#!/usr/bin/env bash
# Run 59 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the attention CUDA tests, Llama-2-7B dense decode, and the
# kernel timeline of its decode steps (run59_trace.txt) into $OUT/trace.tgz.
RUN_LIST=results/bench/run59_list.txt RUN_TRACE=results/bench/run59_trace.txt \
  RUN_CTEST="-R Attention" RUN_NCU=0 bash results/bench/device_run.sh
