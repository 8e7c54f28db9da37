#!/usr/bin/env bash
# Run 135 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root: run 132-133's stamps put ~1 us into code that does almost
# nothing (block 0's merge of four partials), as if the attention waited on
# instruction fetches from DRAM: each layer streams ~400 MB of weights
# through L2, evicting everything else. A temporary build (not on main) gives
# the decode GEMVs' weight loads an L2 evict_first policy, so L2 keeps the
# code, activations and K/V. Builds the bench only; run135_list.txt.
export DS_CUDA_TARGETS="dynsparse-bench cuda_graph_ops_test" \
  DS_CUDA_SKIP_PTXAS=1 DS_CUDA_SKIP_BENCH=1 DS_CUDA_SKIP_PLANS=1 \
  DS_CUDA_CTEST_ARGS="-R GraphOps" DS_CUDA_MODEL_BENCH=1 \
  DS_CUDA_BENCH_LIST=results/bench/run135_list.txt DS_CUDA_DEJAVU_E2E=0
bash kernels/cuda/run_on_gpu.sh >"$OUT/run.log" 2>&1
echo "run_on_gpu.sh exit $?" >>"$OUT/run.log"
exit 0
