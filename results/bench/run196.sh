#!/usr/bin/env bash
# Run 196 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card:
# 1. The new-row attention tests (the lean build against the generic one, bit
#    for bit) and every switch on the backend's fixture decodes.
# 2. run196_list.txt: prompt-128 decode, Llama-2-7B and OPT-6.7B, with the
#    fused decode attention's lean build (DYNSPARSE_CUDA_LEAN_ATTENTION=1:
#    27 KB of code against 53 KB, same bits) against the default, alternated
#    twice. If instruction fetches under the weight stream are part of the
#    attention's ~7 us a layer, the lean build shortens it.
# On an H200 it then times run188.sh's list (issues 6 and 7 rounds).
# Ran at d62bd1a (results/bench/h100_run196); the lean build lost and was
# removed after it, so the switch no longer exists past that commit.
bash results/bench/switch_ab.sh run196 lean \
  "dynsparse-bench cuda_attention_test cuda_backend_test" \
  "-R DecodeNewRow|EverySwitchDecodesAnF16Model"
