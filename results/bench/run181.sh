#!/usr/bin/env bash
# Run 181 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only (issues 5, 6 and 7 set their targets
# there; elsewhere it prints the card and stops): the grid-choice and
# one-wave GEMV plan tests, the fused MLP's and the decode attention's
# (both in-launch sums share ArrivesLast); run180_list.txt (issue 6 item 3's DejaVu decode
# on OPT-66B and OPT-30B with the fused sparse MLP on the grid of one block
# an SM and of two, and dense) and run177_list.txt less OPT-66B (issue 7
# item 3's keys=cached decode at 4k / 8k / 16k with and without the one-wave
# tensor-core GEMV, 4-row steps, issue 5 item 2's prompt-128 decode); then
# one round of the sparse MLP benchmark's A/B of the two grids and of the
# split sum in the launch (on the grid of one block an SM).
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  echo "not an H200, skipped:"
  nvidia-smi -L
  exit 0
fi
{
  cat results/bench/run180_list.txt
  grep -v -e opt-66b -e '^#' results/bench/run177_list.txt
} >/tmp/run181_list.txt
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_sparse_ops_test cuda_gemv_test cuda_attention_test"
RUN_LIST=/tmp/run181_list.txt \
  RUN_CTEST="-R FusedMlpLaunchPicks|FusedSparseMlpMatches|OneWaveBuild|AttentionTest" \
  bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 1 \
  "DYNSPARSE_CUDA_MLP_ONE_BLOCK=1,DYNSPARSE_CUDA_MLP_ONE_BLOCK=0,DYNSPARSE_CUDA_MLP_SUM_IN_KERNEL=1" \
  OPT-66B OPT-175B OPT-30B
cd "$OUT" && tar czf logs.tgz build.log parity.log ctest.log ptxas_gemv.txt \
  2>/dev/null
rm -f build.log parity.log ctest.log ptxas_gemv.txt
exit 0
