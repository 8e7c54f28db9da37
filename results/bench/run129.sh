#!/usr/bin/env bash
# Run 129 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: the one-row GEMV that stages row groups in shared memory
# so a 4096x4096 projection streams in one wave (gemv.cu GemvStagedKernel,
# DYNSPARSE_CUDA_GEMV_STAGE) and the argmax's float4 loads. The GEMV, graph-op,
# switch, fused-op and whole-backend CUDA tests, run129_list.txt's dense
# decode with staging off and on, alternated twice, and Llama-2-7B kernel
# timelines with it off and on (run129_trace.txt).
RUN_LIST=results/bench/run129_list.txt RUN_NCU=0 \
  RUN_CTEST="-R Gemv|GraphOps|CudaSwitches|FusedOps|CudaBackend" \
  RUN_TRACE=results/bench/run129_trace.txt \
  bash results/bench/device_run.sh
exit 0
