#!/usr/bin/env bash
# Run 106 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: builds only the CUDA backend test and runs
# CudaBackendTest.EverySwitchDecodesAnF16Model verbosely (every on/off
# DYNSPARSE_CUDA_* switch off its default against the default, f16 weights,
# a Llama and an OPT fixture): its max relative differences land in ctest.log.
DS_CUDA_TARGETS=cuda_backend_test DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 \
  DS_CUDA_SKIP_PLANS=1 DS_CUDA_MODEL_BENCH=0 \
  DS_CUDA_CTEST_ARGS="-R EverySwitch -V" \
  bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
echo "run_on_gpu.sh exit $?" >>"$OUT/run.log"
exit 0
