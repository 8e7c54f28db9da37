#!/usr/bin/env bash
# Run 131 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: one-row GEMVs whose K takes two or three steps of the
# standard tile (Llama-2-7B's down projection: 1376 chunks, three steps) take
# it in one with one row a warp and 11 loads a lane (gemv.cu GemvTile
# kLongRows, DYNSPARSE_CUDA_GEMV_LONG_ROWS). Run 130's temporary carveout
# switches are gone (the staged GEMV removed). The GEMV, graph-op, switch,
# fused-op and whole-backend CUDA tests, run131_list.txt and two timelines.
RUN_LIST=results/bench/run131_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|GraphOps|CudaSwitches|FusedOps|CudaBackend" \
  RUN_TRACE=results/bench/run131_trace.txt \
  bash results/bench/device_run.sh
exit 0
