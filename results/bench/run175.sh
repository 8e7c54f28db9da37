#!/usr/bin/env bash
# Run 175 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any card: the GEMV, backend, token-op and sparse-op
# CUDA tests on the defaults after runs 167-174, then run175_list.txt.
export DS_CUDA_TARGETS="dynsparse-bench cuda_gemv_test cuda_backend_test \
cuda_token_ops_test cuda_sparse_ops_test cuda_linear_test cuda_fused_ops_test"
RUN_LIST=results/bench/run175_list.txt \
  RUN_CTEST="-R Gemv|CudaBackendTest|TokenOps|SparseOps|LinearTest|FusedOps" RUN_PACK_LOGS=1 \
  bash results/bench/device_run.sh
exit 0
