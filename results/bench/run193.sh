#!/usr/bin/env bash
# Run 193 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: the decode attention asking L2 for the
# O-projection's later rows as its blocks finish (DYNSPARSE_CUDA_L2_NEXT_WEIGHT=1,
# off by default; the NOTES' attention window).
# 1. The attention tests (the prefetch keeps the bits) and the backend's
#    switch test (every switch, this one on, decodes to the default's logits).
# 2. run193_list.txt: prompt-128 decode, on against off, alternated.
# On an H200 it then times run188.sh's list (issues 6 and 7 rounds).
# Ran at b907ad9 (results/bench/h100_run193); the switch was removed after
# it, so the list's switched rows need that commit.
# Since run 193 ran, its steps live in switch_ab.sh (shared with the other run).
bash results/bench/switch_ab.sh run193 l2 "dynsparse-bench cuda_attention_test cuda_backend_test" \
  "-R DecodeNewRow|EverySwitch"
