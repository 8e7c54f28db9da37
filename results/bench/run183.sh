#!/usr/bin/env bash
# Run 183 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: run183_list.txt (DejaVu decode of
# Llama-2-7B and OPT-13B with the fused sparse MLP on the grid of one block
# an SM for every MLP against the default, alternated three times), after
# the grid-choice test.
export DS_CUDA_TARGETS="dynsparse-bench cuda_sparse_ops_test"
RUN_LIST=results/bench/run183_list.txt RUN_CTEST="-R FusedMlpLaunchPicks" \
  bash results/bench/device_run.sh
exit 0
