#!/usr/bin/env bash
# Run 191 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on an H200 only: run 188's rows in the order that matters
# when little device time is left. Prompt-128 decode once each (the build),
# then the sparse MLP rounds (issue 6 item 3's 85% on OPT-66B / OPT-175B),
# then run191_list.txt: 8k keys=cached against dense (issue 7 item 3), last
# the OPT-66B DejaVu / dense pair. Results land as they finish.
source results/bench/require_h200.sh || exit 0
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench"
RUN_LIST=results/bench/run191_first.txt RUN_CTEST="-R NoSuchTest" \
  bash results/bench/device_run.sh
for name in bench.jsonl bench.log run.log; do mv "$OUT/$name" "$OUT/first_$name"; done
bash results/bench/sparse_mlp_ab.sh 2 \
  "DYNSPARSE_CUDA_MLP_ONE_BLOCK=1,DYNSPARSE_CUDA_MLP_ONE_BLOCK=1" \
  OPT-66B OPT-175B
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run191_list.txt \
  RUN_CTEST="-R NoSuchTest" bash results/bench/device_run.sh
(cd "$OUT" && tar czf first.tgz first_* && rm -f first_*)
exit 0
