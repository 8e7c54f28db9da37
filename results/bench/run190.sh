#!/usr/bin/env bash
# Run 190 (any sm_90 card): run 189's wave build at OccupancyBound blocks an
# SM (its loop state spills; WaveBound edited by hand, not committed) against
# the default. run190_list.txt lost its Llama-2-7B default rows (cut from
# run189_list.txt by line number); run 189's rows on the same machine stand in.
export DS_CUDA_TARGETS="dynsparse-bench"
RUN_LIST=results/bench/run190_list.txt RUN_CTEST="-R NoSuchTest" \
  bash results/bench/device_run.sh
python3 results/bench/decode_rows.py "$OUT/bench.jsonl"
