#!/usr/bin/env bash
# Run 125 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the one-row GEMVs built to fit one more block an SM
# (DYNSPARSE_CUDA_GEMV_BOUNDS, gemv.cu OccupancyBound) against ptxas's own
# register counts. The GEMV, switch, fused-op and whole-backend CUDA tests
# (with the new head_dim-128 random models and MultiChunkDecodeMatchesCpu),
# run125_list.txt's dense decode of Llama-2-7B and OPT-6.7B with the switch
# off and on, alternated twice, and Llama-2-7B kernel timelines with it off
# and on (run125_trace.txt).
RUN_LIST=results/bench/run125_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|CudaSwitches|FusedOps|CudaBackend" \
  RUN_TRACE=results/bench/run125_trace.txt \
  bash results/bench/device_run.sh
exit 0
