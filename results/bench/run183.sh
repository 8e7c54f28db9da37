#!/usr/bin/env bash
# Run 183 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: run183_list.txt (DejaVu decode of
# Llama-2-7B and OPT-13B with the fused sparse MLP on the grid of one block
# an SM for every MLP against the default, alternated three times), after
# the grid-choice test and the fused MLP's and decode attention's tests
# (their in-launch sums share ArrivesLast).
export DS_CUDA_TARGETS="dynsparse-bench cuda_sparse_ops_test cuda_attention_test"
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run183_list.txt RUN_CTEST="-R FusedMlpLaunchPicks|FusedSparseMlpMatches|AttentionTest" \
  bash results/bench/device_run.sh
exit 0
