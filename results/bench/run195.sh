#!/usr/bin/env bash
# Run 195 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card:
# 1. The GEMV tests, WeightsEvictFirstKeepsTheBits among them.
# 2. run195_list.txt: prompt-128 decode, Llama-2-7B and OPT-6.7B, with the
#    one-row GEMVs' weight loads under an L2 evict_first policy
#    (DYNSPARSE_CUDA_WEIGHTS_EVICT_FIRST=1) against the plain loads,
#    alternated twice. Run 135 (an H200) had the hinted load at evict_first
#    2-5% ahead of the same load at evict_normal, with no plain row beside.
# On an H200 it then times run188.sh's list (issues 6 and 7 rounds).
bash results/bench/switch_ab.sh run195 evict "dynsparse-bench cuda_gemv_test" \
  "-R ^GemvTest -E ModelSized"
