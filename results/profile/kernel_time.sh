#!/usr/bin/env bash
# Device time by kernel of eager decode steps (LazyLLM's token path), on the
# GPU machine after run_on_gpu.sh built build-cuda-gpu/ (with
# tools/cupti_trace): each line "name|dynsparse-bench arguments" of $KT_LIST
# runs once under the CUPTI recorder and tools/cupti_trace/kernel_time.py
# tables its last 20 steps (launches, device time, extension of the timeline,
# idle time before each kernel). Output: $OUT/kernel_time.tgz (name.md,
# name.log; name.csv only where the table failed).
set -uo pipefail
source results/profile/cupti_tracer.sh kernel_time
dir="$OUT/kernel_time"
mkdir -p "$dir"
while IFS='|' read -r name args; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  # shellcheck disable=SC2086  # the arguments are a word list
  CUDA_INJECTION64_PATH="$PWD/$tracer" DYNSPARSE_TRACE_OUT="$dir/$name.csv" \
    timeout 200 "$build/dynsparse-bench" $args --json >"$dir/$name.log" 2>&1
  echo "kernel_time $name: rc $?"
  # The CSV stays (for a rerun of the table) only when the table failed.
  python3 tools/cupti_trace/kernel_time.py "$dir/$name.csv" --steps 20 \
    --top 60 >"$dir/$name.md" 2>>"$dir/$name.log" && rm -f "$dir/$name.csv"
done <"$KT_LIST"
tar czf "$OUT/kernel_time.tgz" -C "$OUT" kernel_time && rm -rf "$dir"
