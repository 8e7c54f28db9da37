#!/usr/bin/env bash
# Run 192 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: the o-projection's weight loads before
# its PDL wait in fewer of its blocks (DYNSPARSE_CUDA_ACCUMULATE_EARLY_EVERY;
# the NOTES' attention window: its early loads queue ahead of the attention).
# 1. The GEMV tests (early_loads_every keeps the bits).
# 2. run192_list.txt: prompt-128 decode, every block / every second / none,
#    alternated.
# On an H200 it then times run188.sh's list (issues 6 and 7 rounds).
# Since run 192 ran, its steps live in switch_ab.sh (shared with the other run).
bash results/bench/switch_ab.sh run192 early "dynsparse-bench cuda_gemv_test" \
  "-R Gemv -E ModelSized"
