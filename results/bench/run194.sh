#!/usr/bin/env bash
# Run 194 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card:
# 1. The GEMV tests after b929703 (one early_loads_every field instead of a
#    flag beside it; ptxas -v unchanged).
# 2. run194_list.txt: prompt-128 decode, Llama-2-7B and OPT-6.7B, and OPT-6.7B
#    with every second block's early loads against the default, alternated.
# On an H200 it then times run188.sh's list (issues 6 and 7 rounds).
bash results/bench/switch_ab.sh run194 every2 "dynsparse-bench cuda_gemv_test" \
  "-R ^GemvTest -E ModelSized"
