#!/usr/bin/env bash
# Run 105 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the CUDA tests of the backend, the graph ops and the sparse
# ops (WriteCacheRows into an f16 cache; the generic ops on an f16 model; the
# fused MLP's repeat call), and run105_list.txt's fused / generic-ops pair.
RUN_LIST=results/bench/run105_list.txt RUN_NCU=0 \
  RUN_CTEST="-R CudaBackend|GraphOps|SparseOps|FusedOps" bash results/bench/device_run.sh
exit 0
