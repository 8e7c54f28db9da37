#!/usr/bin/env bash
# The device half of a switch A/B run (run192.sh, run193.sh), from the
# repository root on the GPU machine, carrying build_cuda_deps:
#   switch_ab.sh RUN SUFFIX "TARGETS" "CTEST_ARGS"
# builds TARGETS, runs `ctest -L cuda CTEST_ARGS` and results/bench/RUN_list.txt
# (device_run.sh), prints each row's decode time and settings
# (decode_rows.py), leaves bench_SUFFIX.jsonl, logs_SUFFIX.tgz and
# RUN_logs.tgz in $OUT, then runs run188.sh (on an H200 only).
run="$1" suffix="$2"
export DS_CUDA_TARGETS="$3"
RUN_PACK_LOGS=1 RUN_LIST="results/bench/${run}_list.txt" RUN_CTEST="$4" \
  bash results/bench/device_run.sh
python3 results/bench/decode_rows.py "$OUT/bench.jsonl"
grep -E 'tests passed|tests failed' "$OUT/run.log" | tail -2
mv "$OUT/bench.jsonl" "$OUT/bench_${suffix}.jsonl"
mv "$OUT/logs.tgz" "$OUT/logs_${suffix}.tgz"
(cd "$OUT" && tar czf "${run}_logs.tgz" --remove-files bench.log run.log)
bash results/bench/run188.sh
