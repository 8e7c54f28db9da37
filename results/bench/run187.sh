#!/usr/bin/env bash
# Run 187 on the GPU machine (device tool, carrying build_cuda_deps and
# old_619a594.tgz), from the repository root: whether prompt-128 dense decode
# lost time in code since run 138, as three rounds of 619a594 (run 138:
# Llama-2-7B 3.616 ms, 1.13-1.14x the floor) against this tree on
# run187_ab_list.txt, on any sm_90 card; then run188.sh (an H200 only: more
# rounds of what runs 185 and 181 left at their targets' line). Make the
# tarball first:
#   git archive --format=tar.gz 619a594 -- . ':(exclude)results' \
#     ':(exclude)models' ':(exclude)docs' ':(exclude)tests/fixtures' \
#     >old_619a594.tgz   # listed in .git/info/exclude, carried
export DS_CUDA_TARGETS="dynsparse-bench dynsparse_sparse_mlp_bench \
cuda_sparse_ops_test"
echo "# (build only)" >/tmp/empty_list.txt
RUN_PACK_LOGS=1 RUN_LIST=/tmp/empty_list.txt RUN_CTEST="-R FusedMlpLaunchPicks" \
  bash results/bench/device_run.sh
mv "$OUT/run.log" "$OUT/build_run.log"
mv "$OUT/logs.tgz" "$OUT/build_logs.tgz"  # run188.sh packs its own
bash results/bench/old_new_ab.sh old_619a594.tgz 3 results/bench/run187_ab_list.txt
bash results/bench/run188.sh
exit 0
