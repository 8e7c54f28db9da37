#!/usr/bin/env bash
# Run 157 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run157_list.txt (prompt-128 dense decode for issue 5 item 2,
# the issue 7 item 3 table) with the GEMV, backend, switch and token-op tests
# that the head-ready code's removal touches.
RUN_LIST=results/bench/run157_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|CudaBackendTest|CudaSwitches|TopCount|TokenOps" \
  bash results/bench/device_run.sh
