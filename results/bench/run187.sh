#!/usr/bin/env bash
# Run 187 on the GPU machine (device tool, carrying build_cuda_deps and
# old_619a594.tgz), from the repository root; on an H200: more rounds of
# what runs 185 and 181 left at the line, and whether prompt-128 dense decode
# lost time since run 138: three rounds of 619a594 (run 138: Llama-2-7B
# 3.616 ms, 1.13-1.14x the floor) against this tree on run187_ab_list.txt;
# then run187_list.txt (8k keys=cached decode against dense, three
# alternated pairs) and two rounds of the sparse MLP benchmark's default
# grid, twice a round, on OPT-66B and OPT-175B (issue 6 item 3's 85%).
# Make the tarball first:
#   git archive --format=tar.gz 619a594 -- . ':(exclude)results' \
#     ':(exclude)models' ':(exclude)docs' ':(exclude)tests/fixtures' \
#     >old_619a594.tgz   # listed in .git/info/exclude, carried
# The old-against-new part runs first and on any sm_90 card (whether code or
# machine moved the decode is answered on any card); the rest on an H200 only.
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_sparse_ops_test"
echo "# (build only)" >/tmp/empty_list.txt
RUN_PACK_LOGS=1 RUN_LIST=/tmp/empty_list.txt RUN_CTEST="-R FusedMlpLaunchPicks" \
  bash results/bench/device_run.sh
mv "$OUT/run.log" "$OUT/build_run.log"
bash results/bench/old_new_ab.sh old_619a594.tgz 3 results/bench/run187_ab_list.txt
source results/bench/require_h200.sh || exit 0
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run187_list.txt \
  RUN_CTEST="-R FusedMlpLaunchPicks" bash results/bench/device_run.sh
bash results/bench/sparse_mlp_ab.sh 2 \
  "DYNSPARSE_CUDA_MLP_ONE_BLOCK=1,DYNSPARSE_CUDA_MLP_ONE_BLOCK=1" \
  OPT-66B OPT-175B
exit 0
