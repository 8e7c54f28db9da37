#!/usr/bin/env bash
# Run 185 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only (elsewhere it prints the card and stops):
# run181.sh cut to fit the device time a session had left. The grid-choice
# test and the in-launch merge tests (as run186.sh); run185_list.txt (OPT-66B
# DejaVu decode on both MLP grids and dense, prompt-128 dense decode,
# keys=cached at 8k against dense); then one round of the sparse MLP
# benchmark's A/B of the two grids on OPT-66B and OPT-175B.
source results/bench/require_h200.sh || exit 0
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_sparse_ops_test cuda_attention_test cuda_token_ops_test"
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run185_list.txt RUN_CTEST="-R \
FusedMlpLaunchPicks|FusedSparseMlpMatches|AttentionTest.Matches|TokenOpsTest" \
  bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 1 \
  "DYNSPARSE_CUDA_MLP_ONE_BLOCK=1,DYNSPARSE_CUDA_MLP_ONE_BLOCK=0" \
  OPT-66B OPT-175B
exit 0
