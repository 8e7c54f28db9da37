#!/usr/bin/env bash
# Run 124 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: after e93d944 (both decode attention kernels share one
# ChunkPartial, a refactor): the attention CUDA tests and Llama-2-7B dense
# decode, building only those two targets (little device time was left).
export DS_CUDA_TARGETS="cuda_attention_test dynsparse-bench" DS_CUDA_SKIP_PTXAS=1 \
  DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 DS_CUDA_CTEST_ARGS="-R Attention" \
  DS_CUDA_MODEL_BENCH=1 DS_CUDA_BENCH_LIST=results/bench/run124_list.txt
bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
echo "run_on_gpu.sh exit $?" >>"$OUT/run.log"
exit 0
