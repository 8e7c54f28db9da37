#!/usr/bin/env bash
# Run 63 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the decode stack's CUDA tests (and the pipelined decode
# tests, whose dense steps it now runs), then dense decode with the stack
# against the layer-by-layer kernels (run63_list.txt).
RUN_LIST=results/bench/run63_list.txt \
  RUN_CTEST="-R DecodeStack|Pipelined|CudaBackend --timeout 120" RUN_NCU=0 \
  bash results/bench/device_run.sh
