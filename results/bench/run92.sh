#!/usr/bin/env bash
# Run 92 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the lazy K/V's earlier forcing rule. The sparse and lazy
# K/V CUDA tests, issue 6's decode pairs (run92_list.txt) and the kernel
# timelines of OPT-66B DejaVu steps 9-12 and 27-30 (run92_trace.txt).
RUN_LIST=results/bench/run92_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Sparse|LazyKv|DecodeStack" RUN_TRACE=results/bench/run92_trace.txt \
  bash results/bench/device_run.sh
