#!/usr/bin/env bash
# Run 184 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: the grid-choice test at the new default
# (the fused sparse MLP's grid of one block an SM for every MLP), then
# run184_list.txt (DejaVu decode on OPT-6.7B, Llama-2-13B and Llama-3-8B on
# that grid and on the grid of two, alternated twice).
export DS_CUDA_TARGETS="dynsparse-bench cuda_sparse_ops_test"
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run184_list.txt \
  RUN_CTEST="-R FusedMlpLaunchPicks|SparseDecodeEqualsMasked" \
  bash results/bench/device_run.sh
exit 0
