#!/usr/bin/env bash
# Run 128 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: after the review's mends (GatedGemv's plan sized by the
# kernel it launches; the random models' config written per process). The
# GEMV, fused-op and whole-backend CUDA tests, building only those targets.
export DS_CUDA_TARGETS="cuda_gemv_test cuda_fused_ops_test cuda_backend_test" \
  DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 \
  DS_CUDA_CTEST_ARGS="-R Gemv|FusedOps|CudaBackend"
bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
echo "run_on_gpu.sh exit $?" >>"$OUT/run.log"
exit 0
