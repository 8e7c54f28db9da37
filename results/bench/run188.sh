#!/usr/bin/env bash
# Run 188 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only (elsewhere it prints the card and stops):
# what run187.sh runs after its old-against-new half (which ran on an H100,
# run 187), in the order that matters when little device time is left, since
# results land as they finish. run188_first.txt (prompt-128 dense decode once
# each) with the build; two rounds of the sparse MLP benchmark's default grid,
# twice a round, on OPT-66B and OPT-175B (issue 6 item 3's 85%); then
# run188_list.txt: 8k keys=cached against dense (issue 7 item 3), last the
# OPT-66B DejaVu / dense pair. The first ctest also runs the GEMV tests
# (since b929703: GemvArgs' early-load flag folded into early_loads_every).
source results/bench/require_h200.sh || exit 0
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_sparse_ops_test cuda_gemv_test"
RUN_LIST=results/bench/run188_first.txt \
  RUN_CTEST="-R FusedMlpLaunchPicks|^GemvTest -E ModelSized" \
  bash results/bench/device_run.sh
for name in bench.jsonl bench.log run.log; do mv "$OUT/$name" "$OUT/first_$name"; done
bash results/bench/sparse_mlp_ab.sh 2 \
  "DYNSPARSE_CUDA_MLP_ONE_BLOCK=1,DYNSPARSE_CUDA_MLP_ONE_BLOCK=1" \
  OPT-66B OPT-175B
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run188_list.txt \
  RUN_CTEST="-R NoSuchTest" bash results/bench/device_run.sh
# The first rows and the text logs in one archive: run187.sh and run189.sh
# leave files of their own in $OUT, and at most 8 come back.
(cd "$OUT" && tar czf run188_logs.tgz first_* bench.log run.log &&
  rm -f first_* bench.log run.log)
exit 0
