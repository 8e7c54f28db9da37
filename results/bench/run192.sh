#!/usr/bin/env bash
# Run 192 on the GPU machine (device tool, carrying build_cuda_deps), from the
# repository root, on any sm_90 card: the o-projection's weight loads before
# its PDL wait in fewer of its blocks (DYNSPARSE_CUDA_ACCUMULATE_EARLY_EVERY;
# the NOTES' attention window: its early loads queue ahead of the attention).
# 1. The GEMV tests (early_loads_every keeps the bits).
# 2. run192_list.txt: prompt-128 decode, every block / every second / none,
#    alternated.
# On an H200 it then times run188.sh's list (issues 6 and 7 rounds).
export DS_CUDA_TARGETS="dynsparse-bench cuda_gemv_test"
RUN_PACK_LOGS=1 RUN_LIST=results/bench/run192_list.txt \
  RUN_CTEST="-R Gemv -E ModelSized" bash results/bench/device_run.sh
python3 results/bench/decode_rows.py "$OUT/bench.jsonl"
grep -E 'tests passed|tests failed' "$OUT/run.log" | tail -2
mv "$OUT/bench.jsonl" "$OUT/bench_early.jsonl"
mv "$OUT/logs.tgz" "$OUT/logs_early.tgz"
(cd "$OUT" && tar czf run192_logs.tgz --remove-files bench.log run.log)
bash results/bench/run188.sh
