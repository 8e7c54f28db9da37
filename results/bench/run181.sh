#!/usr/bin/env bash
# Run 181 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only (issues 5, 6 and 7 set their targets
# there; elsewhere it prints the card and stops): the grid-choice and
# one-wave GEMV plan tests, and the tests of the in-launch merges whose
# counters ArrivesLast now resets (decode attention, keyed attention, the
# fused sparse MLP's split sum); issue 6 item 3's DejaVu decode on OPT-66B with
# the fused sparse MLP on the grid of one block an SM (default) and of two,
# alternated, and dense, then OPT-30B's DejaVu and dense (run180_list.txt);
# run177_list.txt less OPT-66B and less its DYNSPARSE_CUDA_DEEP_MMA=0 rows
# (issue 7 item 3's keys=cached decode at 4k / 8k / 16k, 4-row steps,
# issue 5 item 2's prompt-128 decode); then one round of the sparse MLP
# benchmark's A/B of the two grids and of the split sum in the launch.
source results/bench/require_h200.sh || exit 0
{
  grep -v '^#' results/bench/run180_list.txt | grep opt-66b
  grep -v -e '^#' -e MLP_ONE_BLOCK results/bench/run180_list.txt |
    grep opt-30b | sed -n '1p;$p'
  grep -v -e opt-66b -e '^#' -e DEEP_MMA=0 results/bench/run177_list.txt
} >/tmp/run181_list.txt
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_sparse_ops_test cuda_gemv_test cuda_attention_test cuda_token_ops_test"
RUN_PACK_LOGS=1 RUN_LIST=/tmp/run181_list.txt RUN_CTEST="-R \
FusedMlpLaunchPicks|OneWaveBuild|FusedSparseMlpMatches|AttentionTest.Matches|TokenOpsTest" \
  bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 1 \
  "DYNSPARSE_CUDA_MLP_ONE_BLOCK=1,DYNSPARSE_CUDA_MLP_ONE_BLOCK=0,DYNSPARSE_CUDA_MLP_SUM_IN_KERNEL=1" \
  OPT-66B OPT-175B OPT-30B
exit 0
